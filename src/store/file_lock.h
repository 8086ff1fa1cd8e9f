// An exclusive advisory lock (flock) on a lock file, held for the object's life: how concurrent `tern models`
// processes take turns on one model name or one download. The kernel drops it when the process dies, so a killed
// pull never leaves the store locked.
#pragma once

#include <functional>
#include <string>

#include "base/status.h"

namespace tern::store {

class FileLock {
public:
    // Creates `path` if needed and waits for the lock; `on_wait` is called once if another process holds it.
    static Result<FileLock> acquire(const std::string& path, const std::function<void()>& on_wait = {});
    FileLock(FileLock&& other) noexcept : fd_(other.fd_) { other.fd_ = -1; }
    FileLock& operator=(FileLock&&) = delete;
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    ~FileLock();

private:
    explicit FileLock(int fd) : fd_(fd) {}
    int fd_ = -1;
};

}  // namespace tern::store

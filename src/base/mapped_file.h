// A read-only memory mapping of a whole file. Pages load lazily, so opening a large model is fast.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace tern {

class MappedFile {
public:
    static Result<std::unique_ptr<MappedFile>> open(const std::string& path);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }

    // Drops the whole pages of [begin, begin + bytes) from this process's resident memory (MADV_DONTNEED): a later
    // read of them faults them in again from the page cache, so this costs time, never correctness. A range
    // outside the mapping is ignored.
    void release_pages(const uint8_t* begin, size_t bytes) const;

private:
    MappedFile(const uint8_t* data, size_t size) : data_(data), size_(size) {}
    const uint8_t* data_;
    size_t size_;
};

}  // namespace tern

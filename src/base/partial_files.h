// Files being written under a temporary name (GgufWriter writes `<path>.partial-<pid>` and renames it into place).
// A failed write removes its own; these hooks remove them when SIGINT or SIGTERM ends the process mid-write (tern
// quantize on a large model runs for minutes), so that an interrupted run leaves nothing behind.
#pragma once

#include <string>

namespace tern {

// Handlers for SIGINT and SIGTERM that unlink every registered file and then end the process as the signal would
// have (the exit status still says which signal). Programs that take these signals with sigwait() never run them.
void remove_partial_files_on_signal();

// While registered (at most 16 at once; more are simply not removed on a signal), `path` is removed by the handlers.
class PartialFile {
public:
    explicit PartialFile(std::string path);
    ~PartialFile();  // unregisters; the file itself is the writer's to rename or remove
    PartialFile(const PartialFile&) = delete;
    PartialFile& operator=(const PartialFile&) = delete;

    const std::string& path() const { return path_; }

private:
    std::string path_;
    int slot_ = -1;
};

}  // namespace tern

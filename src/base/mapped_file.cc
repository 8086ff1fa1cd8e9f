#include "base/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace tern {

Result<std::unique_ptr<MappedFile>> MappedFile::open(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status(StatusCode::kNotFound, path + ": cannot open: " + std::strerror(errno));
    struct stat info {};
    if (::fstat(fd, &info) != 0 || !S_ISREG(info.st_mode)) {
        ::close(fd);
        return invalid_argument(path + ": not a regular file");
    }
    const size_t size = static_cast<size_t>(info.st_size);
    if (size == 0) {
        ::close(fd);
        return std::unique_ptr<MappedFile>(new MappedFile(nullptr, 0));
    }
    void* address = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int map_errno = errno;
    ::close(fd);
    if (address == MAP_FAILED) return internal_error(path + ": mmap failed: " + std::strerror(map_errno));
    return std::unique_ptr<MappedFile>(new MappedFile(static_cast<const uint8_t*>(address), size));
}

void MappedFile::release_pages(const uint8_t* begin, size_t bytes) const {
    if (data_ == nullptr || begin < data_ || bytes > size_ || begin - data_ > static_cast<ptrdiff_t>(size_ - bytes)) {
        return;
    }
    const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
    const uintptr_t start = (reinterpret_cast<uintptr_t>(begin) + page - 1) / page * page;  // whole pages only:
    const uintptr_t end = (reinterpret_cast<uintptr_t>(begin) + bytes) / page * page;      // neighbours share the rest
    if (end > start) ::madvise(reinterpret_cast<void*>(start), end - start, MADV_DONTNEED);
}

MappedFile::~MappedFile() {
    if (data_ != nullptr) ::munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace tern

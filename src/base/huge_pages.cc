#include "base/huge_pages.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace tern {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kPage = size_t{4} << 10;

size_t round_up(size_t value, size_t multiple) { return (value + multiple - 1) / multiple * multiple; }

}  // namespace

std::shared_ptr<uint8_t> allocate_large(size_t bytes, FirstTouch first_touch) {
    if (bytes < kHugePage) {
        void* memory = std::aligned_alloc(64, round_up(bytes == 0 ? 1 : bytes, 64));
        if (memory == nullptr) return nullptr;
        return std::shared_ptr<uint8_t>(static_cast<uint8_t*>(memory), [](uint8_t* pointer) { std::free(pointer); });
    }
    // Map a huge page more than needed, then give back the unaligned head and the tail.
    const size_t size = round_up(bytes, kPage), mapped = size + kHugePage;
    void* address = ::mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (address == MAP_FAILED) return nullptr;
    const auto base = reinterpret_cast<uintptr_t>(address);
    const uintptr_t start = round_up(base, kHugePage);
    if (start > base) ::munmap(address, start - base);
    if (base + mapped > start + size) ::munmap(reinterpret_cast<void*>(start + size), base + mapped - start - size);
    // Advice only: without THP the memory works the same on 4 KiB pages. With FirstTouch::kNow every page is touched
    // here: a first touch later may wait for the kernel to compact memory into a huge page, a stall in the middle of
    // serving.
    ::madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
    if (first_touch == FirstTouch::kNow) std::memset(reinterpret_cast<void*>(start), 0, size);
    return std::shared_ptr<uint8_t>(reinterpret_cast<uint8_t*>(start),
                                    [size](uint8_t* pointer) { ::munmap(pointer, size); });
}

std::shared_ptr<uint8_t> HugePageArena::allocate(size_t bytes) {
    constexpr size_t kLargestBuffer = size_t{64} << 20;
    bytes = round_up(bytes == 0 ? 1 : bytes, 64);
    if (bytes >= kLargestBuffer / 2) return allocate_large(bytes, first_touch_);  // large enough for huge pages of its own
    if (used_ + bytes > capacity_) {
        const size_t next = std::min(kLargestBuffer, std::max(kHugePage, 2 * capacity_));
        const size_t size = std::max(next, round_up(bytes, kHugePage));
        buffer_ = allocate_large(size, first_touch_);
        if (buffer_ == nullptr) {
            capacity_ = used_ = 0;
            return nullptr;
        }
        capacity_ = size;
        used_ = 0;
    }
    std::shared_ptr<uint8_t> piece(buffer_, buffer_.get() + used_);
    used_ += bytes;
    return piece;
}

}  // namespace tern

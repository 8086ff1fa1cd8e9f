// Large buffers (packed weights, the KV cache) on transparent huge pages: their start 2 MiB-aligned and the range
// marked with madvise(MADV_HUGEPAGE), which Linux's default THP mode ("madvise") asks for. A stream through
// 4 KiB pages takes a TLB miss every 4 KiB and the hardware prefetcher stops at each page's end; on 2 MiB pages a
// batch-1 decode of TinyLlama Q4_0 runs 10-35% faster on the project's Zen 4 VM (docs/perf/kernels.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tern {

// When a large buffer's pages are first touched: at once (the KV cache, whose blocks are first written while
// serving, where a page fault could wait on compaction), or by the caller's first writes, which follow at once (the
// weights, written whole while loading: touching them first was a second pass over 8 GB, docs/perf/big-model.md).
enum class FirstTouch { kNow, kByCaller };

// `bytes` of memory, 64-byte aligned; from 2 MiB on, 2 MiB-aligned, zero (fresh pages), with huge pages requested
// and, with FirstTouch::kNow, every page touched before it is returned. Below 2 MiB it is not initialised. Nothing is
// reserved beyond `bytes` rounded up to 4 KiB. Returns null when the memory cannot be had.
std::shared_ptr<uint8_t> allocate_large(size_t bytes, FirstTouch first_touch = FirstTouch::kNow);

// Pieces of a few large huge-page buffers (allocate_large) for many allocations each under 2 MiB, which alone would
// sit on 4 KiB pages: a model's small packed matrices (a mixture's experts: 0.9 MB each). Buffers start at 2 MiB and
// double up to 64 MiB, so at most about half of the last one is unused. Each piece, 64-byte aligned, keeps its
// buffer alive. Not thread-safe.
class HugePageArena {
public:
    explicit HugePageArena(FirstTouch first_touch = FirstTouch::kNow) : first_touch_(first_touch) {}

    // Zeroed memory of `bytes` (rounded up to 64); null when it cannot be had.
    std::shared_ptr<uint8_t> allocate(size_t bytes);

private:
    FirstTouch first_touch_;
    std::shared_ptr<uint8_t> buffer_;
    size_t used_ = 0;
    size_t capacity_ = 0;
};

}  // namespace tern

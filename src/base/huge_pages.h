// Large buffers (packed weights, the KV cache) on transparent huge pages: their start 2 MiB-aligned and the range
// marked with madvise(MADV_HUGEPAGE), which Linux's default THP mode ("madvise") asks for. A stream through
// 4 KiB pages takes a TLB miss every 4 KiB and the hardware prefetcher stops at each page's end; on 2 MiB pages a
// batch-1 decode of TinyLlama Q4_0 runs 10-35% faster on the project's Zen 4 VM (docs/perf/kernels.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace tern {

// `bytes` of memory, 64-byte aligned; from 2 MiB on, 2 MiB-aligned, with huge pages requested and every page
// touched (zeroed) before it is returned, so that no page fault waits on compaction later. Below 2 MiB it is not
// initialised. Nothing is reserved beyond `bytes` rounded up to 4 KiB. Returns null when the memory cannot be had.
std::shared_ptr<uint8_t> allocate_large(size_t bytes);

// Pieces of a few large huge-page buffers (allocate_large) for many allocations each under 2 MiB, which alone would
// sit on 4 KiB pages: a model's small packed matrices (a mixture's experts: 0.9 MB each). Buffers start at 2 MiB and
// double up to 64 MiB, so at most about half of the last one is unused. Each piece, 64-byte aligned, keeps its
// buffer alive. Not thread-safe.
class HugePageArena {
public:
    // Zeroed memory of `bytes` (rounded up to 64); null when it cannot be had.
    std::shared_ptr<uint8_t> allocate(size_t bytes);

private:
    std::shared_ptr<uint8_t> buffer_;
    size_t used_ = 0;
    size_t capacity_ = 0;
};

}  // namespace tern

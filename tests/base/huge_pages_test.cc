#include "base/huge_pages.h"

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tern {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(AllocateLarge, SmallBuffersAre64ByteAligned) {
    for (size_t bytes : {size_t{0}, size_t{1}, size_t{100}, kMiB}) {
        const std::shared_ptr<uint8_t> buffer = allocate_large(bytes);
        ASSERT_NE(buffer, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.get()) % 64, 0u) << bytes;
        std::memset(buffer.get(), 0x5A, bytes);
    }
}

TEST(AllocateLarge, LargeBuffersStartOnA2MiBBoundaryAndHoldEveryByte) {
    for (size_t bytes : {2 * kMiB, 5 * kMiB + 123, 17 * kMiB}) {
        const std::shared_ptr<uint8_t> buffer = allocate_large(bytes);
        ASSERT_NE(buffer, nullptr);
        EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.get()) % (2 * kMiB), 0u) << bytes;
        std::memset(buffer.get(), 0xA5, bytes);
        EXPECT_EQ(buffer.get()[bytes - 1], 0xA5);
    }
}

// Where the kernel grants transparent huge pages on request (mode "madvise" or "always"), the buffer gets them.
TEST(AllocateLarge, GetsHugePagesWhereTheKernelGrantsThem) {
    std::ifstream mode_file("/sys/kernel/mm/transparent_hugepage/enabled");
    std::string mode((std::istreambuf_iterator<char>(mode_file)), std::istreambuf_iterator<char>());
    if (mode.find("[never]") != std::string::npos || mode.empty()) GTEST_SKIP() << "THP is off here";
    const size_t bytes = 16 * kMiB;
    const std::shared_ptr<uint8_t> buffer = allocate_large(bytes);
    ASSERT_NE(buffer, nullptr);
    std::memset(buffer.get(), 1, bytes);
    // /proc/self/smaps: the mapping that holds the buffer, and its AnonHugePages line.
    const auto address = reinterpret_cast<uintptr_t>(buffer.get());
    std::ifstream smaps("/proc/self/smaps");
    std::string line;
    bool in_mapping = false;
    long huge_kib = -1;
    while (std::getline(smaps, line)) {
        uintptr_t begin = 0, end = 0;
        char dash = 0;
        std::istringstream range(line);
        if (range >> std::hex >> begin >> dash >> end && dash == '-') {
            in_mapping = begin <= address && address < end;
        } else if (in_mapping && line.rfind("AnonHugePages:", 0) == 0) {
            huge_kib = std::stol(line.substr(14));
            break;
        }
    }
    ASSERT_GE(huge_kib, 0) << "no mapping holds the buffer";
    if (huge_kib == 0) GTEST_SKIP() << "the kernel gave no huge page now (fragmented memory?)";
    EXPECT_GE(huge_kib, 2048);
}

// Pieces are 64-byte aligned, zeroed, disjoint, inside huge-page buffers, and outlive the arena.
TEST(HugePageArena, PiecesAreAlignedZeroedAndDisjoint) {
    std::vector<std::pair<std::shared_ptr<uint8_t>, size_t>> pieces;
    {
        HugePageArena arena;
        for (size_t bytes : {size_t{1}, size_t{100}, kMiB - 7, 3 * kMiB, size_t{64}, 900 * size_t{1000}, 40 * kMiB}) {
            for (int repeat = 0; repeat < 3; ++repeat) {
                std::shared_ptr<uint8_t> piece = arena.allocate(bytes);
                ASSERT_NE(piece, nullptr);
                EXPECT_EQ(reinterpret_cast<uintptr_t>(piece.get()) % 64, 0u) << bytes;
                for (size_t idx = 0; idx < bytes; idx += 4093) ASSERT_EQ(piece.get()[idx], 0) << bytes;
                ASSERT_EQ(piece.get()[bytes - 1], 0);
                pieces.emplace_back(std::move(piece), bytes);
            }
        }
    }
    for (size_t i = 0; i < pieces.size(); ++i) {  // each piece written with its own value, then all read back
        std::memset(pieces[i].first.get(), static_cast<int>(i + 1), pieces[i].second);
    }
    for (size_t i = 0; i < pieces.size(); ++i) {
        const auto [piece, bytes] = pieces[i];
        EXPECT_EQ(piece.get()[0], static_cast<uint8_t>(i + 1));
        EXPECT_EQ(piece.get()[bytes - 1], static_cast<uint8_t>(i + 1)) << "piece " << i << " overlaps the next";
    }
}

}  // namespace
}  // namespace tern

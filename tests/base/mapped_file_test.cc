// MappedFile::release_pages drops a range's whole pages from the process's resident memory and nothing else: the
// bytes read the same afterwards (faulted in again from the page cache), and the pages it shares with neighbours
// stay.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/mapped_file.h"

namespace tern {
namespace {

// Kilobytes of `begin`'s mapping resident in this process, from /proc/self/smaps.
int64_t resident_kb(const uint8_t* begin) {
    std::ifstream smaps("/proc/self/smaps");
    const auto address = reinterpret_cast<uintptr_t>(begin);
    bool inside = false;
    for (std::string line; std::getline(smaps, line);) {
        unsigned long low = 0, high = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx ", &low, &high) == 2) {  // a mapping's header line
            inside = address >= low && address < high;
            continue;
        }
        if (inside && line.rfind("Rss:", 0) == 0) return std::stoll(line.substr(4));
    }
    return -1;
}

TEST(MappedFile, ReleasedPagesLeaveResidentMemoryAndReadTheSame) {
    const std::string path = ::testing::TempDir() + "/mapped_" + std::to_string(::getpid()) + ".bin";
    const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
    std::vector<uint8_t> bytes(256 * page);
    for (size_t idx = 0; idx < bytes.size(); ++idx) bytes[idx] = static_cast<uint8_t>(idx * 131 + idx / 7);
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                 static_cast<std::streamsize>(bytes.size()));
    auto mapped = MappedFile::open(path);
    ASSERT_TRUE(mapped.is_ok()) << mapped.status().message();
    const MappedFile& file = *mapped.value();
    uint64_t sum = 0;
    for (size_t idx = 0; idx < file.size(); idx += page) sum += file.data()[idx];  // every page in
    ASSERT_GT(sum, 0u);
    const int64_t page_kb = static_cast<int64_t>(page / 1024);
    EXPECT_GE(resident_kb(file.data()), 250 * page_kb);
    // From mid first page to mid last page: those two partial pages stay, the 254 whole ones between go.
    file.release_pages(file.data() + page / 2, file.size() - page);
    const int64_t left = resident_kb(file.data());
    EXPECT_GE(left, 1 * page_kb);
    EXPECT_LE(left, 2 * page_kb);
    EXPECT_EQ(std::vector<uint8_t>(file.data(), file.data() + file.size()), bytes);
    file.release_pages(file.data() + file.size() - 10, 20);  // past the end: ignored
    file.release_pages(file.data() - page, 10);              // before the start: ignored
    std::remove(path.c_str());
}

}  // namespace
}  // namespace tern

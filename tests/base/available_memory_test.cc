// The memory a process can take: the host's MemAvailable, or the headroom under its cgroup's limit when that is
// less, read from fake /proc and /sys/fs/cgroup trees (cgroup v2, v1, a container whose own path is not mounted).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "base/available_memory.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
constexpr uint64_t kGiB = uint64_t{1} << 30;

class AvailableMemoryTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = fs::path(::testing::TempDir()) / ("memory_" + std::to_string(::getpid()));
        fs::remove_all(root_);
        fs::create_directories(root_ / "cgroup");
        sources_ = {(root_ / "meminfo").string(), (root_ / "self_cgroup").string(), (root_ / "cgroup").string()};
        write("meminfo", "MemTotal: 25165824 kB\nMemAvailable: 16777216 kB\n");  // 16 GiB available
    }
    void TearDown() override { fs::remove_all(root_); }

    void write(const fs::path& relative, const std::string& text) {
        fs::create_directories((root_ / relative).parent_path());
        std::ofstream(root_ / relative) << text;
    }

    fs::path root_;
    MemorySources sources_;
};

TEST_F(AvailableMemoryTest, NoCgroupLimitIsTheHostsMemAvailable) {
    write("self_cgroup", "0::/user.slice\n");
    write("cgroup/user.slice/memory.max", "max\n");
    const AvailableMemory memory = read_available_memory(sources_);
    EXPECT_EQ(memory.host_available, 16 * kGiB);
    EXPECT_FALSE(memory.cgroup_headroom.has_value());
    EXPECT_EQ(memory.bytes(), 16 * kGiB);
}

// A pod limited to 4 GiB that uses 1.5 GiB, 0.5 GiB of it inactive file cache (the model file): 3 GiB left.
TEST_F(AvailableMemoryTest, CgroupV2LimitOfThePodWins) {
    write("self_cgroup", "0::/kubepods/pod1/ctr\n");
    write("cgroup/kubepods/pod1/ctr/memory.max", "max\n");
    write("cgroup/kubepods/pod1/memory.max", std::to_string(4 * kGiB) + "\n");
    write("cgroup/kubepods/pod1/memory.current", std::to_string(3 * kGiB / 2) + "\n");
    write("cgroup/kubepods/pod1/memory.stat", "anon 1073741824\ninactive_file " + std::to_string(kGiB / 2) + "\n");
    const AvailableMemory memory = read_available_memory(sources_);
    ASSERT_TRUE(memory.cgroup_headroom.has_value());
    EXPECT_EQ(*memory.cgroup_headroom, 3 * kGiB);
    EXPECT_EQ(memory.bytes(), 3 * kGiB);
    EXPECT_EQ(memory.cgroup_limited_by, (root_ / "cgroup/kubepods/pod1/memory.max").string());
}

// Inside the container's cgroup namespace its path reads "/", and the limit sits at the mount's root.
TEST_F(AvailableMemoryTest, ContainerSeesItsLimitAtTheRoot) {
    write("self_cgroup", "0::/\n");
    write("cgroup/memory.max", std::to_string(2 * kGiB) + "\n");
    write("cgroup/memory.current", std::to_string(kGiB / 4) + "\n");
    EXPECT_EQ(read_available_memory(sources_).bytes(), 2 * kGiB - kGiB / 4);
}

// cgroup v1: "no limit" is a huge number at the root; a limit in the process's own group; the host's figure wins
// when it is the smaller.
TEST_F(AvailableMemoryTest, CgroupV1AndTheSmallerOfTheTwo) {
    write("self_cgroup", "12:pids:/\n4:memory:/docker/abc\n0::/\n");
    write("cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    write("cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(32 * kGiB) + "\n");
    write("cgroup/memory/docker/abc/memory.usage_in_bytes", std::to_string(kGiB) + "\n");
    write("cgroup/memory/docker/abc/memory.stat", "cache 5\ntotal_inactive_file " + std::to_string(kGiB) + "\n");
    AvailableMemory memory = read_available_memory(sources_);
    EXPECT_EQ(memory.cgroup_headroom, 32 * kGiB);
    EXPECT_EQ(memory.bytes(), 16 * kGiB);  // the host has less
    write("cgroup/memory/docker/abc/memory.limit_in_bytes", std::to_string(6 * kGiB) + "\n");
    EXPECT_EQ(read_available_memory(sources_).bytes(), 6 * kGiB);
}

TEST_F(AvailableMemoryTest, UnreadableOrOddFilesAreNoLimit) {
    write("self_cgroup", "garbage\n0::/a\n");
    write("cgroup/a/memory.max", "-5\n");
    write("cgroup/memory.max", "99999999999999999999999\n");  // out of range
    EXPECT_EQ(read_available_memory(sources_).bytes(), 16 * kGiB);
    sources_.meminfo = (root_ / "missing").string();
    EXPECT_EQ(read_available_memory(sources_).bytes(), 0u);
}

}  // namespace
}  // namespace tern

// How much memory this process can still take: the host's MemAvailable, or less inside a container whose cgroup has
// a memory limit (Kubernetes' resources.limits.memory, docker --memory). Budgets sized from the host's figure alone
// get a pod OOM-killed when its KV cache is first touched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace tern {

// Where the figures are read; tests point these at files of their own.
struct MemorySources {
    std::string meminfo = "/proc/meminfo";
    std::string self_cgroup = "/proc/self/cgroup";
    std::string cgroup_root = "/sys/fs/cgroup";
};

struct AvailableMemory {
    uint64_t host_available = 0;              // MemAvailable; 0 when it cannot be read
    std::optional<uint64_t> cgroup_headroom;  // the tightest limit of this cgroup and its ancestors less their use
    std::string cgroup_limited_by;            // the memory.max (or v1 memory.limit_in_bytes) file that set it

    // The smaller of the two; 0 when neither is known.
    uint64_t bytes() const;
};

// A cgroup's use counts like the kubelet's working set: usage less the inactive file cache, which the kernel
// reclaims before it would kill anything (a model file read through the page cache is charged to the cgroup too).
AvailableMemory read_available_memory(const MemorySources& sources = {});

}  // namespace tern

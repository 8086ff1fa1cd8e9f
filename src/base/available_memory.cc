#include "base/available_memory.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string_view>
#include <vector>

namespace tern {
namespace {

// The first line of `path` as a number of bytes; nullopt when missing or not a number ("max": no limit).
std::optional<uint64_t> read_number(const std::string& path) {
    std::ifstream file(path);
    std::string text;
    if (!(file >> text) || text.empty() || text.find_first_not_of("0123456789") != std::string::npos) {
        return std::nullopt;
    }
    try {
        return std::stoull(text);
    } catch (...) {  // out of range
        return std::nullopt;
    }
}

// The value of `key` in a "key value" file (memory.stat).
uint64_t read_stat(const std::string& path, std::string_view key) {
    std::ifstream file(path);
    std::string name;
    uint64_t value = 0;
    while (file >> name >> value) {
        if (name == key) return value;
    }
    return 0;
}

// The cgroup paths of this process that can hold a memory limit: cgroup v2's "0::PATH" and v1's "N:...memory...:PATH".
struct CgroupPaths {
    std::optional<std::string> unified, memory_v1;
};

CgroupPaths read_cgroup_paths(const std::string& self_cgroup) {
    CgroupPaths paths;
    std::ifstream file(self_cgroup);
    for (std::string line; std::getline(file, line);) {
        const size_t first = line.find(':'), second = line.find(':', first + 1);
        if (first == std::string::npos || second == std::string::npos) continue;
        const std::string controllers = "," + line.substr(first + 1, second - first - 1) + ",";
        const std::string path = line.substr(second + 1);
        if (line.compare(0, first, "0") == 0 && controllers == ",,") paths.unified = path;
        if (controllers.find(",memory,") != std::string::npos) paths.memory_v1 = path;
    }
    return paths;
}

// The cgroup's folder and each ancestor's up to the mount root. Inside a container the process's own path often
// does not exist under the mount (the namespace's root is the container's cgroup): the root itself is then tried.
std::vector<std::string> folders_up(const std::string& mount, const std::string& path) {
    std::vector<std::string> folders;
    std::string current = path;
    while (!current.empty() && current != "/") {
        folders.push_back(mount + current);
        current = current.substr(0, current.find_last_of('/'));
    }
    folders.push_back(mount);
    return folders;
}

struct LimitFiles {
    const char* limit;
    const char* usage;
    const char* inactive_file;  // in memory.stat
};

void tighten(const std::string& folder, const LimitFiles& files, AvailableMemory* out) {
    const std::optional<uint64_t> limit = read_number(folder + "/" + files.limit);
    // cgroup v1 says "no limit" with a huge page-rounded number.
    if (!limit || *limit >= (uint64_t{1} << 62)) return;
    const uint64_t usage = read_number(folder + "/" + files.usage).value_or(0);
    const uint64_t reclaimable = std::min(usage, read_stat(folder + "/memory.stat", files.inactive_file));
    const uint64_t used = usage - reclaimable;
    const uint64_t headroom = *limit > used ? *limit - used : 0;
    if (!out->cgroup_headroom || headroom < *out->cgroup_headroom) {
        out->cgroup_headroom = headroom;
        out->cgroup_limited_by = folder + "/" + files.limit;
    }
}

}  // namespace

uint64_t AvailableMemory::bytes() const {
    if (!cgroup_headroom) return host_available;
    return host_available == 0 ? *cgroup_headroom : std::min(host_available, *cgroup_headroom);
}

AvailableMemory read_available_memory(const MemorySources& sources) {
    AvailableMemory out;
    std::ifstream meminfo(sources.meminfo);
    std::string key, unit;
    uint64_t value = 0;
    while (meminfo >> key >> value >> unit) {
        if (key == "MemAvailable:") out.host_available = value * 1024;
    }
    const CgroupPaths paths = read_cgroup_paths(sources.self_cgroup);
    if (paths.unified) {  // a v2-only host mounts the tree at the root, a hybrid one under unified/
        for (const std::string& mount : {sources.cgroup_root, sources.cgroup_root + "/unified"}) {
            for (const std::string& folder : folders_up(mount, *paths.unified)) {
                tighten(folder, {"memory.max", "memory.current", "inactive_file"}, &out);
            }
        }
    }
    if (paths.memory_v1) {
        for (const std::string& folder : folders_up(sources.cgroup_root + "/memory", *paths.memory_v1)) {
            tighten(folder, {"memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file"}, &out);
        }
    }
    return out;
}

}  // namespace tern

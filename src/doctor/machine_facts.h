// What `tern doctor` reads about the machine before it measures anything: the CPU, the cores this process may use,
// the memory it can take (base/available_memory.h), transparent huge pages and how busy the cores already are.
#pragma once

#include <cstdint>
#include <string>

#include "base/available_memory.h"

namespace tern::doctor {

// Where the facts are read; tests point these at files of their own.
struct MachineSources {
    std::string cpuinfo = "/proc/cpuinfo";
    std::string loadavg = "/proc/loadavg";
    std::string transparent_hugepage = "/sys/kernel/mm/transparent_hugepage/enabled";
    MemorySources memory;
};

struct MachineFacts {
    std::string cpu_model;          // /proc/cpuinfo's "model name"; "unknown" when absent
    int usable_cores = 0;           // this process's CPU affinity (a container's cpuset)
    std::string kernels;            // the instruction set tern's kernels run with (avx512, avx2, ref)
    AvailableMemory memory;
    std::string transparent_hugepage;  // the selected mode: always, madvise or never; "" when unreadable
    double load_average = 0.0;         // 1-minute load average
};

MachineFacts read_machine_facts(const MachineSources& sources = {});

// The bracketed choice of a /sys "always [madvise] never" line.
std::string selected_mode(const std::string& line);

}  // namespace tern::doctor

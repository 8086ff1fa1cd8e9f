// What `tern doctor` reads about the machine before it measures anything: the CPU, the cores this process may use,
// the memory it can take (base/available_memory.h), transparent huge pages and how busy the cores already are.
#pragma once

#include <cstdint>
#include <string>

#include "base/available_memory.h"
#include "base/thread_pool.h"

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

// The ceilings `tern doctor` and `tern plan --device local` measure now with the pool's threads (seconds): read
// bandwidth (a 1 GiB stream), and the int8 dot-product and fp32 FMA peaks (0 where the kernels have no probes).
struct MeasuredCeilings {
    double read_bytes_per_s = 0.0;
    double int8_ops_per_s = 0.0;
    double fp32_flops = 0.0;
};
MeasuredCeilings measure_ceilings(ThreadPool& pool);

// The bracketed choice of a /sys "always [madvise] never" line.
std::string selected_mode(const std::string& line);

}  // namespace tern::doctor

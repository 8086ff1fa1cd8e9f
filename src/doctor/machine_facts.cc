#include "doctor/machine_facts.h"

#include <sched.h>

#include <fstream>

#include "kernels/cpu_features.h"
#include "model_bench/model_bench.h"

namespace tern::doctor {

std::string selected_mode(const std::string& line) {
    const size_t open = line.find('['), close = line.find(']', open);
    if (open == std::string::npos || close == std::string::npos) return "";
    return line.substr(open + 1, close - open - 1);
}

namespace {

std::string cpu_model(const std::string& path) {
    std::ifstream file(path);
    for (std::string line; std::getline(file, line);) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const size_t start = line.find_first_not_of(" \t", colon + 1);
        return start == std::string::npos ? "unknown" : line.substr(start);
    }
    return "unknown";
}

int usable_cores() {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}

}  // namespace

MeasuredCeilings measure_ceilings(ThreadPool& pool) {
    MeasuredCeilings ceilings;
    ceilings.read_bytes_per_s = measure_memory_bandwidth(pool, int64_t{1} << 30, 3).read_gb_per_s.median() * 1e9;
    if (auto peak = measure_compute_peak(pool, 3); peak.is_ok()) {
        ceilings.int8_ops_per_s = peak.value().int8_gops.median() * 1e9;
        ceilings.fp32_flops = peak.value().fp32_gflops.median() * 1e9;
    }
    return ceilings;
}

MachineFacts read_machine_facts(const MachineSources& sources) {
    MachineFacts facts;
    facts.cpu_model = cpu_model(sources.cpuinfo);
    facts.usable_cores = usable_cores();
    facts.kernels = kernels::isa_name(kernels::select_isa());
    facts.memory = read_available_memory(sources.memory);
    std::ifstream thp(sources.transparent_hugepage);
    std::string line;
    if (std::getline(thp, line)) facts.transparent_hugepage = selected_mode(line);
    std::ifstream load(sources.loadavg);
    load >> facts.load_average;
    return facts;
}

}  // namespace tern::doctor

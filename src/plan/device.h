// Devices the planner sizes against: memory, memory bandwidth and dense peak throughput, from a preset (this
// machine's CPU as measured, common NVIDIA GPUs from their datasheets) or given on the command line.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tern::plan {

struct DeviceSpec {
    std::string name;
    std::string description;
    int64_t memory_bytes = 0;          // what the runtime can address (nvidia-smi's memory.total for GPUs)
    double bandwidth_bytes_per_s = 0;  // peak memory bandwidth; 0 when unknown (no throughput estimate then)
    double fp16_flops = 0;             // dense 16-bit float matrix peak (no sparsity); the CPU's fp32 FMA peak
    double int8_ops = 0;               // dense int8 matrix peak (no sparsity)
    // Shares of the peaks a serving engine reaches in practice; calibration from a measured profile replaces them.
    double bandwidth_efficiency = 0.7;
    double compute_efficiency = 0.5;
};

const std::vector<DeviceSpec>& device_presets();
std::optional<DeviceSpec> find_device(std::string_view name);
std::string device_preset_names();

}  // namespace tern::plan

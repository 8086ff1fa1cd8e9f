#include "plan/device.h"

namespace tern::plan {
namespace {

constexpr int64_t kMiB = int64_t{1} << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

}  // namespace

// Sources.
// - cpu: /work/shared/ANCHORS.md, measured on this machine (2 vCPU Xeon "Emerald Rapids", 24 GiB): 25.9 GB/s
//   read-only bandwidth (2 threads), 346 GFLOP/s fp32 FMA (no avx512_fp16, so f16/bf16 weights compute in fp32),
//   1509 GOP/s int8 VNNI. Its efficiencies are llama.cpp's on the same machine (same file), the prior before any
//   calibration: tinyllama decode at 51-72% of the read bandwidth, batched decode at about 10% of the int8 peak.
//   With 0.60 and 0.095 the roofline step model (perf_model.h) gives llama-batched-bench's 22 / 60 / 74 tok/s at
//   1 / 8 / 16 sequences within 13% (68 at 8 and 16: llama.cpp does not overlap streaming with compute, so its
//   curve bends more gently than a roofline). A `tern bench serve` profile of tern itself replaces them.
// - GPU memory is nvidia-smi's memory.total as printed on real cards (MiB): RTX 4090 24564, L4 23034, A10 23028,
//   A100 40960 / 81920, H100 SXM 81559, H200 143771 (ECC reserves part of the nominal 24 GB on L4 and A10).
// - GPU bandwidth and dense peaks are NVIDIA's datasheet figures halved where the datasheet quotes sparsity:
//   RTX 4090: 1008 GB/s, 165.2 TFLOPS fp16 with fp32 accumulate, 660.6 TOPS int8 (Ada whitepaper, as listed at
//     https://waredb.com/processor/nvidia-geforce-rtx-4090);
//   L4: 300 GB/s, 242 TFLOPS fp16 and 485 TOPS int8 with sparsity (https://grokipedia.com/page/NVIDIA_L4_vs_L40S);
//   A10: 600 GB/s (https://www.baseten.co/blog/nvidia-a10-vs-a10g-for-ml-model-inference/), 125 TFLOPS fp16 and
//     250 TOPS int8 dense (NVIDIA A10 datasheet);
//   A100: 1555 GB/s (40 GB) and 2039 GB/s (80 GB SXM), 312 TFLOPS fp16, 624 TOPS int8
//     (https://glennklockwood.com/garden/processors/A100, citing the NVIDIA A100 datasheet);
//   H100 SXM: 3350 GB/s, 989.4 TFLOPS fp16, 1978.9 TOPS int8 (https://glennklockwood.com/garden/processors/h100);
//   H200 SXM: 4.8 TB/s, same GH100 compute as the H100 SXM (https://www.morphllm.com/nvidia-h200).
// GPU efficiencies (70% of bandwidth in decode, 50% of the matrix peak in prefill) are assumptions, not
// measurements; a `tern bench serve` profile (--profile) replaces them.
const std::vector<DeviceSpec>& device_presets() {
    static const std::vector<DeviceSpec> kDevices = {
        {"cpu", "this machine's CPU (2 vCPU Xeon, AVX-512 VNNI), measured", 24 * kGiB, 25.9e9, 346e9, 1509e9, 0.60,
         0.095},
        {"rtx4090", "NVIDIA GeForce RTX 4090 24 GB (consumer)", 24564 * kMiB, 1008e9, 165.2e12, 660.6e12, 0.7, 0.5},
        {"l4", "NVIDIA L4 24 GB", 23034 * kMiB, 300e9, 121e12, 242.5e12, 0.7, 0.5},
        {"a10", "NVIDIA A10 24 GB", 23028 * kMiB, 600e9, 125e12, 250e12, 0.7, 0.5},
        {"a100-40gb", "NVIDIA A100 40 GB", 40960 * kMiB, 1555e9, 312e12, 624e12, 0.7, 0.5},
        {"a100-80gb", "NVIDIA A100 80 GB SXM", 81920 * kMiB, 2039e9, 312e12, 624e12, 0.7, 0.5},
        {"h100", "NVIDIA H100 80 GB SXM", 81559 * kMiB, 3350e9, 989.4e12, 1978.9e12, 0.7, 0.5},
        {"h200", "NVIDIA H200 141 GB SXM", 143771 * kMiB, 4800e9, 989.4e12, 1978.9e12, 0.7, 0.5},
    };
    return kDevices;
}

std::optional<DeviceSpec> find_device(std::string_view name) {
    for (const DeviceSpec& device : device_presets()) {
        if (device.name == name) return device;
    }
    return std::nullopt;
}

std::string device_preset_names() {
    std::string names;
    for (const DeviceSpec& device : device_presets()) names += (names.empty() ? "" : ", ") + device.name;
    return names;
}

}  // namespace tern::plan

#include "doctor/advice.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/engine_config.h"

namespace tern::doctor {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

ModelOutlook outlook(const ModelNeeds& needs, double read_bytes_per_s, uint64_t available_bytes) {
    ModelOutlook out;
    if (needs.decode_bytes_per_token > 0) {
        out.decode_tokens_per_s = read_bytes_per_s / static_cast<double>(needs.decode_bytes_per_token);
    }
    const double context_bytes =
        static_cast<double>(needs.kv_bytes_per_token) * static_cast<double>(needs.context_length);
    if (context_bytes > 0) {
        const double default_budget = engine::kDefaultKvMemoryFraction * static_cast<double>(available_bytes);
        out.contexts_at_default_budget = static_cast<int64_t>(default_budget / context_bytes);
        const double left = static_cast<double>(available_bytes) - static_cast<double>(needs.weight_bytes);
        out.contexts_at_most = left > 0 ? static_cast<int64_t>(left / context_bytes) : 0;
    }
    return out;
}

std::vector<Warning> warnings_for(const MachineFacts& facts, const std::optional<ModelNeeds>& needs,
                                  const std::optional<ModelOutlook>& model_outlook) {
    std::vector<Warning> warnings;
    if (facts.transparent_hugepage == "never") {
        warnings.push_back({"transparent huge pages are off: weights stream through 4 KiB pages (a TLB miss per "
                            "page; decode ran at 60% of the read bandwidth instead of 100% on a mixture model)",
                            "echo madvise | sudo tee /sys/kernel/mm/transparent_hugepage/enabled"});
    }
    if (facts.usable_cores > 0 && facts.load_average > 0.5 * facts.usable_cores) {
        warnings.push_back({fmt::format("the cores are busy before tern runs (load average {:.2f} on {} usable cores): "
                                        "measurements and serving share them",
                                        facts.load_average, facts.usable_cores),
                            "stop the other work, or give tern cores of its own (taskset, a cpuset)"});
    }
    if (needs && model_outlook) {
        const uint64_t available = facts.memory.bytes();
        if (static_cast<uint64_t>(needs->weight_bytes) >= available) {
            warnings.push_back({fmt::format("{} needs {:.2f} GiB for its weights; {:.2f} GiB is available",
                                            needs->path, needs->weight_bytes / kGiB, available / kGiB),
                                "free memory, raise the container's memory limit, or use a smaller quantization "
                                "(tern quantize)"});
        } else if (model_outlook->contexts_at_default_budget < 1) {
            warnings.push_back({fmt::format("the default KV budget (40% of {:.2f} GiB available) holds no full context "
                                            "of {} tokens",
                                            available / kGiB, needs->context_length),
                                fmt::format("serve with --max-model-len {} or less, or --kv-cache-mem up to {:.1f}",
                                            std::max<int64_t>(1, static_cast<int64_t>(
                                                engine::kDefaultKvMemoryFraction * static_cast<double>(available) /
                                                std::max<int64_t>(1, needs->kv_bytes_per_token))),
                                            0.9 * (available - needs->weight_bytes) / kGiB)});
        }
    }
    return warnings;
}

}  // namespace tern::doctor

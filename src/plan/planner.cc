#include "plan/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>

namespace tern::plan {
namespace {

constexpr int64_t kMaxTensorParallel = 8;  // one node: tensor parallelism beyond it crosses a slow network
constexpr double kKneeShare = 0.95;        // planned concurrency reaches this share of the memory-limited throughput

struct Candidate {
    ReplicaMemory memory;
    std::optional<ThroughputPlan> throughput;
    DeviceCount devices;
};

Status validate_options(const PlanOptions& options) {
    TERN_RETURN_IF_ERROR(validate_shape(options.model, options.model.name));
    if (options.device.memory_bytes <= 0) return invalid_argument("the device memory must be positive");
    if (options.headroom < 0 || options.headroom >= 1) return invalid_argument("headroom must lie in [0, 1)");
    if (options.block_size < 1 || options.block_size > 4096) {
        return invalid_argument("block size must be 1 to 4096 tokens");
    }
    if (options.batch_tokens < 1) return invalid_argument("batch tokens must be positive");
    if (options.num_devices < 0 || options.tensor_parallel < 0 || options.pipeline_parallel < 0) {
        return invalid_argument("device counts and parallel degrees must not be negative");
    }
    if (options.weight_type && !is_plannable_weight_type(*options.weight_type)) {
        return invalid_argument(
            fmt::format("weight type {} is not supported; use f32, f16, bf16, q8_0, q6_K, q5_K, "
                        "q5_0, q5_1, q4_K, q4_0, q4_1, q3_K or q2_K",
                        dtype_name(*options.weight_type)));
    }
    if (options.weight_bytes && *options.weight_bytes <= 0) return invalid_argument("weight bytes must be positive");
    if (options.kv_budget_bytes && *options.kv_budget_bytes <= 0)
        return invalid_argument("the KV budget must be positive");
    TERN_RETURN_IF_ERROR(check_kv_type(options.model, options.kv_type));
    const Workload& workload = options.workload;
    for (double value :
         {workload.input.mean, workload.input.p50, workload.input.p95, workload.input.p99, workload.output.mean,
          workload.output.p50, workload.output.p95, workload.output.p99, workload.peak_requests_per_s,
          workload.slo_ttft_ms, workload.slo_tpot_ms, options.device.bandwidth_bytes_per_s, options.device.fp16_flops,
          options.device.int8_ops, options.device_hour_cost}) {
        if (!(value >= 0) || !std::isfinite(value)) {
            return invalid_argument("lengths, rates, latency targets, device figures and costs must not be negative");
        }
    }
    if (!(options.device.bandwidth_efficiency > 0) || !(options.device.compute_efficiency > 0)) {
        return invalid_argument("efficiencies must be positive");
    }
    return Status::ok();
}

void fill_percentiles(LengthStats* stats, double fallback_mean) {
    if (stats->mean <= 0) stats->mean = stats->p50 > 0 ? stats->p50 : fallback_mean;
    if (stats->p50 <= 0) stats->p50 = stats->mean;
    if (stats->p95 <= 0) stats->p95 = std::max(stats->mean, stats->p50);
    if (stats->p99 <= 0) stats->p99 = stats->p95;
}

Status fill_workload(const std::vector<ProfilePoint>& profile, Workload* workload) {
    const auto any = [](const LengthStats& stats) { return stats.mean + stats.p50 + stats.p95 + stats.p99 > 0; };
    if (workload->lengths_source == "default" && (any(workload->input) || any(workload->output))) {
        workload->lengths_source = "flags";
    }
    // Without lengths of its own, the plan serves the traffic the profile was measured with.
    if (workload->lengths_source == "default" && !profile.empty() && profile.front().input_tokens_mean &&
        profile.front().output_tokens_mean) {
        workload->input.mean = *profile.front().input_tokens_mean;
        workload->output.mean = *profile.front().output_tokens_mean;
        workload->lengths_source = "profile";
    }
    fill_percentiles(&workload->input, kDefaultInputTokens);
    fill_percentiles(&workload->output, kDefaultOutputTokens);
    if (workload->output.mean < 1) return invalid_argument("the mean output length must be at least 1 token");
    if (workload->input.p50 > workload->input.p95 || workload->input.p95 > workload->input.p99 ||
        workload->output.p50 > workload->output.p95 || workload->output.p95 > workload->output.p99) {
        return invalid_argument("length percentiles must not decrease: P50 <= P95 <= P99");
    }
    return Status::ok();
}

WeightFootprint choose_weights(const PlanOptions& options, std::string* source) {
    WeightFootprint weights;
    if (options.weight_type || !options.model.file_weight_bytes) {
        weights = weight_footprint(options.model, options.weight_type.value_or(DType::kF16));
        *source = "shapes";
    } else {
        weights = file_weight_footprint(options.model);
        *source = "GGUF tensors";
    }
    if (options.weight_bytes) {
        weights = with_total_bytes(weights, *options.weight_bytes);
        *source = "given";
    }
    return weights;
}

int64_t cap_tokens(double tokens, int64_t context) {
    const int64_t rounded = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(tokens)));
    return context > 0 ? std::min(rounded, context) : rounded;
}

// Token totals per request at each percentile; with real lengths, the percentiles of the sum.
double total_at(const Workload& workload, const char* which) {
    const std::string label = which;
    const auto pick = [&](const LengthStats& stats) {
        return label == "mean" ? stats.mean : label == "P50" ? stats.p50 : label == "P95" ? stats.p95 : stats.p99;
    };
    if (workload.total) return pick(*workload.total);
    return pick(workload.input) + pick(workload.output);
}

std::vector<std::pair<int64_t, int64_t>> layout_candidates(const PlanOptions& options) {
    const ModelShape& shape = options.model;
    const int64_t limit = options.num_devices > 0 ? options.num_devices : INT64_MAX;
    std::vector<std::pair<int64_t, int64_t>> layouts;
    if (options.tensor_parallel > 0 || options.pipeline_parallel > 0) {
        layouts.emplace_back(std::max<int64_t>(1, options.tensor_parallel),
                             std::max<int64_t>(1, options.pipeline_parallel));
        return layouts;
    }
    for (int64_t tp = 1; tp <= kMaxTensorParallel && tp <= limit; tp *= 2) {
        if (valid_tensor_parallel(shape, tp)) layouts.emplace_back(tp, 1);
    }
    return layouts;
}

// Largest integer concurrency in [1, limit] with value(concurrency) <= target (value rises with concurrency).
int64_t largest_within(int64_t limit, double target, const std::function<double(int64_t)>& value) {
    if (value(1) > target) return 0;
    int64_t low = 1, high = limit;
    while (low < high) {
        const int64_t mid = low + (high - low + 1) / 2;
        if (value(mid) <= target) {
            low = mid;
        } else {
            high = mid - 1;
        }
    }
    return low;
}

// Smallest integer concurrency in [1, limit] with value(concurrency) >= target (value rises with concurrency).
int64_t smallest_reaching(int64_t limit, double target, const std::function<double(int64_t)>& value) {
    int64_t low = 1, high = limit;
    while (low < high) {
        const int64_t mid = low + (high - low) / 2;
        if (value(mid) >= target) {
            high = mid;
        } else {
            low = mid + 1;
        }
    }
    return low;
}

class Planner {
public:
    Planner(const PlanOptions& options, const WeightFootprint& weights, int64_t request_tokens)
        : options_(options), weights_(weights), request_tokens_(request_tokens) {
        memory_inputs_.device_memory_bytes = options.device.memory_bytes;
        memory_inputs_.weight_bytes = weights.bytes;
        memory_inputs_.kv_bytes_per_token = kv_bytes_per_token(options.model, options.kv_type);
        memory_inputs_.workspace_bytes = workspace_bytes(options.model, options.batch_tokens);
        memory_inputs_.headroom = options.headroom;
        memory_inputs_.block_size = options.block_size;
        memory_inputs_.layout = kv_layout(options.model);
        memory_inputs_.max_step_tokens = options.batch_tokens;
        memory_inputs_.kv_budget_bytes = options.kv_budget_bytes;
        const DeviceSpec& device = options.device;
        int8_ = is_integer_quantized(weights.type) && device.int8_ops > 0;
        peak_ops_ = int8_ ? device.int8_ops : device.fp16_flops;
        has_perf_ = device.bandwidth_bytes_per_s > 0 && peak_ops_ > 0;
        efficiency_ = {device.bandwidth_efficiency, device.compute_efficiency};
    }

    const MemoryInputs& memory_inputs() const { return memory_inputs_; }
    bool has_perf() const { return has_perf_; }

    PerfModel perf_model(const ReplicaMemory& memory) const {
        const double devices = static_cast<double>(memory.devices());
        return PerfModel(options_.model, weights_, static_cast<double>(memory.kv_bytes_per_token),
                         options_.device.bandwidth_bytes_per_s * devices, peak_ops_ * devices, options_.batch_tokens);
    }

    // Calibrates on one replica of the layout the profile was measured with (--tp/--pp, else one device).
    void calibrate_from(const std::vector<ProfilePoint>& points) {
        if (points.empty() || !has_perf_) return;
        const ReplicaMemory measured =
            replica_memory(options_.model, memory_inputs_, std::max<int64_t>(1, options_.tensor_parallel),
                           std::max<int64_t>(1, options_.pipeline_parallel), request_tokens_);
        const Workload& workload = options_.workload;
        calibration_ = calibrate(perf_model(measured), points, efficiency_, workload.input.mean, workload.output.mean);
        efficiency_ = calibration_->efficiency;
    }

    Candidate evaluate(int64_t tensor_parallel, int64_t pipeline_parallel) const {
        Candidate candidate;
        candidate.memory =
            replica_memory(options_.model, memory_inputs_, tensor_parallel, pipeline_parallel, request_tokens_);
        if (!candidate.memory.fits()) return candidate;
        candidate.devices.devices_needed = candidate.memory.devices();
        if (has_perf_) candidate.throughput = plan_throughput(candidate.memory);
        count_devices(&candidate);
        return candidate;
    }

private:
    ThroughputPlan plan_throughput(const ReplicaMemory& memory) const {
        const Workload& workload = options_.workload;
        const PerfModel model = perf_model(memory);
        ThroughputPlan plan;
        plan.efficiency = efficiency_;
        plan.efficiency_source = calibration_ ? "calibrated: " + calibration_->method : "device figures";
        plan.calibration = calibration_;
        plan.int8_compute = int8_;
        plan.replica_bandwidth = options_.device.bandwidth_bytes_per_s * static_cast<double>(memory.devices());
        plan.replica_peak_ops = peak_ops_ * static_cast<double>(memory.devices());
        const double in = workload.input.mean, out = workload.output.mean;
        const auto point_at = [&](int64_t concurrency) {
            return model.at(static_cast<double>(concurrency), in, out, efficiency_);
        };
        choose_concurrency(model, memory.recommended_concurrent, &plan);
        plan.planned = point_at(plan.concurrency);
        const double concurrency = static_cast<double>(plan.concurrency);
        plan.ttft_p95_s = model.ttft_s(concurrency, workload.input.p95, in, out, efficiency_);
        plan.ttft_p99_s = model.ttft_s(concurrency, workload.input.p99, in, out, efficiency_);
        for (int64_t concurrency_row = 1; concurrency_row < memory.recommended_concurrent; concurrency_row *= 2) {
            plan.table.push_back(point_at(concurrency_row));
        }
        plan.table.push_back(point_at(memory.recommended_concurrent));
        return plan;
    }

    // From the memory limit down to the throughput knee, then to the latency targets.
    void choose_concurrency(const PerfModel& model, int64_t memory_limit, ThroughputPlan* plan) const {
        const Workload& workload = options_.workload;
        const double in = workload.input.mean, out = workload.output.mean;
        const auto point_at = [&](int64_t c) { return model.at(static_cast<double>(c), in, out, efficiency_); };
        plan->concurrency = memory_limit;
        plan->bound = "KV-cache memory";
        // Past the knee, more requests in flight add latency and almost no throughput.
        const double limit_rate = point_at(memory_limit).output_tokens_per_s;
        const int64_t knee = smallest_reaching(memory_limit, kKneeShare * limit_rate,
                                               [&](int64_t c) { return point_at(c).output_tokens_per_s; });
        if (knee < plan->concurrency) {
            plan->concurrency = knee;
            plan->bound = "the throughput knee (95% of the throughput at the memory limit)";
        }
        const auto apply_target = [&](double target_ms, const char* name, const std::function<double(int64_t)>& value) {
            if (target_ms <= 0) return;
            const int64_t within = largest_within(memory_limit, target_ms / 1e3, value);
            if (within == 0) {
                plan->slo_met = false;
                plan->bound = std::string(name) + " target (missed even at 1 request)";
                plan->concurrency = 1;
            } else if (within < plan->concurrency) {
                plan->concurrency = within;
                plan->bound = std::string(name) + " target";
            }
        };
        apply_target(workload.slo_tpot_ms, "TPOT", [&](int64_t c) { return point_at(c).tpot_s; });
        apply_target(workload.slo_ttft_ms, "TTFT", [&](int64_t c) {
            return model.ttft_s(static_cast<double>(c), workload.input.p95, in, out, efficiency_);
        });
    }

    void count_devices(Candidate* candidate) const {
        DeviceCount& count = candidate->devices;
        const int64_t per_replica = candidate->memory.devices();
        const double peak = options_.workload.peak_requests_per_s;
        count.devices_by_memory = count.devices_by_throughput = per_replica;
        if (candidate->throughput && options_.num_devices >= per_replica) {
            count.capacity_requests_per_s =
                static_cast<double>(options_.num_devices / per_replica) * candidate->throughput->planned.requests_per_s;
        }
        if (!candidate->throughput || peak <= 0) return;
        const ThroughputPlan& perf = *candidate->throughput;
        const double time_in_system = perf.planned.ttft_s + options_.workload.output.mean * perf.planned.tpot_s;
        count.concurrent_at_peak = peak * time_in_system;
        const auto replicas_for = [](double need) {
            return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(need - 1e-9)));
        };
        const double per_replica_requests = static_cast<double>(candidate->memory.recommended_concurrent);
        const int64_t by_memory = replicas_for(count.concurrent_at_peak / per_replica_requests);
        const int64_t by_throughput = replicas_for(peak / perf.planned.requests_per_s);
        count.replicas = std::max(by_memory, by_throughput);
        count.devices_by_memory = by_memory * per_replica;
        count.devices_by_throughput = by_throughput * per_replica;
        count.devices_needed = count.replicas * per_replica;
    }

    const PlanOptions& options_;
    const WeightFootprint& weights_;
    int64_t request_tokens_;
    MemoryInputs memory_inputs_;
    bool int8_ = false;
    double peak_ops_ = 0;
    bool has_perf_ = false;
    Efficiency efficiency_;
    std::optional<Calibration> calibration_;
};

bool slo_met(const Candidate& candidate) { return !candidate.throughput || candidate.throughput->slo_met; }

// Candidates come in rising tensor-parallel degree. A wider one wins when it meets a latency target the narrower
// one misses, or saves at least 10% of the devices: its all-reduce time is not modelled, so small gains are noise.
bool better_than(const Candidate& wider, const Candidate& narrower) {
    if (slo_met(wider) != slo_met(narrower)) return slo_met(wider);
    return static_cast<double>(wider.devices.devices_needed) <=
           0.9 * static_cast<double>(narrower.devices.devices_needed);
}

Candidate choose_layout(const PlanOptions& options, const Planner& planner) {
    std::optional<Candidate> best;
    Candidate last;
    for (const auto& [tp, pp] : layout_candidates(options)) {
        last = planner.evaluate(tp, pp);
        if (last.memory.fits() && (!best || better_than(last, *best))) best = last;
    }
    if (best || options.tensor_parallel > 0 || options.pipeline_parallel > 0) return best ? *best : last;
    // No tensor-parallel degree fits: split the layers into pipeline stages of the widest tensor-parallel group.
    int64_t widest = 1;
    for (const auto& [tp, pp] : layout_candidates(options)) widest = std::max(widest, tp);
    const int64_t limit = options.num_devices > 0 ? options.num_devices : INT64_MAX;
    for (int64_t pp = 2; pp <= options.model.num_layers && widest * pp <= limit; ++pp) {
        last = planner.evaluate(widest, pp);
        if (last.memory.fits()) return last;
    }
    return last;
}

std::string parallel_advice(const PlanOptions& options, const Candidate& chosen) {
    const ReplicaMemory& memory = chosen.memory;
    const bool forced = options.tensor_parallel > 0 || options.pipeline_parallel > 0;
    if (!memory.fits()) {
        return fmt::format("does not fit: {} devices ({} x {}) leave no room for one request's KV cache{}",
                           memory.devices(), memory.tensor_parallel, memory.pipeline_parallel,
                           forced ? "" : "; use bigger devices, smaller weights (--weight-type) or a q8_0 KV cache");
    }
    std::string layout;
    if (memory.devices() == 1) {
        layout = "fits one device: no model parallelism";
    } else if (memory.pipeline_parallel == 1) {
        layout = fmt::format("tensor parallel {} (heads split over {} devices in one node)", memory.tensor_parallel,
                             memory.tensor_parallel);
    } else {
        layout = fmt::format("pipeline parallel {} x tensor parallel {} ({} layers per stage)",
                             memory.pipeline_parallel, memory.tensor_parallel,
                             (options.model.num_layers + memory.pipeline_parallel - 1) / memory.pipeline_parallel);
    }
    if (forced) layout += " (as given)";
    const int64_t replicas = chosen.devices.replicas;
    if (replicas > 1) {
        layout +=
            fmt::format("; data parallel: {} replicas of {} device(s) behind a router", replicas, memory.devices());
    }
    return layout;
}

std::vector<LengthRow> length_rows(const Plan& plan, const Planner& planner) {
    std::vector<LengthRow> rows;
    const auto add = [&](const std::string& label, int64_t tokens) {
        const ReplicaMemory memory = replica_memory(plan.options.model, planner.memory_inputs(),
                                                    plan.memory.tensor_parallel, plan.memory.pipeline_parallel, tokens);
        rows.push_back({label, tokens, tokens * plan.kv_bytes_per_token, memory.blocks_per_request,
                        memory.max_concurrent, memory.recommended_concurrent});
    };
    for (const char* label : {"mean", "P50", "P95", "P99"}) {
        add(label, cap_tokens(total_at(plan.options.workload, label), plan.context_length));
    }
    if (plan.context_length > 0) add("context", plan.context_length);
    return rows;
}

void add_cost(Plan* plan) {
    const double hour_cost = plan->options.device_hour_cost;
    if (hour_cost <= 0 || !plan->throughput || !plan->fits) return;
    const double devices = static_cast<double>(plan->memory.devices());
    plan->cost_per_million_output_tokens =
        devices * hour_cost / (plan->throughput->planned.output_tokens_per_s * 3600.0) * 1e6;
    const double peak = plan->options.workload.peak_requests_per_s;
    if (peak > 0) {
        const double tokens_per_hour = peak * plan->options.workload.output.mean * 3600.0;
        plan->cost_per_million_at_peak =
            static_cast<double>(plan->devices.devices_needed) * hour_cost / tokens_per_hour * 1e6;
    }
}

void add_warnings(Plan* plan, double requested_tokens) {
    const PlanOptions& options = plan->options;
    if (plan->context_length > 0 && requested_tokens > static_cast<double>(plan->context_length)) {
        plan->warnings.push_back(fmt::format("{} requests of {:.0f} tokens exceed the {}-token context: capped",
                                             plan->planning_label, requested_tokens, plan->context_length));
    }
    if (!plan->throughput) {
        plan->warnings.push_back(
            "no throughput estimate: the device's bandwidth or peak throughput is unknown "
            "(--device-bw, --device-fp16-tflops, --device-int8-tops)");
        if (!options.profile.empty()) {
            plan->warnings.push_back("the profile was not used: no throughput model to calibrate");
        }
    }
    if (plan->throughput && plan->throughput->calibration &&
        (plan->throughput->efficiency.bandwidth > 1 || plan->throughput->efficiency.compute > 1)) {
        plan->warnings.push_back(
            "calibration gives more than 100% of a peak: the measured run was faster than the "
            "device figures allow; check the device and the profile's lengths");
    }
    if (plan->throughput && !plan->throughput->slo_met) {
        plan->warnings.push_back("the latency target cannot be met on this layout even with one request in flight");
    }
    if (options.num_devices > 0 && plan->devices.devices_needed > options.num_devices) {
        plan->warnings.push_back(fmt::format("the peak needs {} devices but only {} are available",
                                             plan->devices.devices_needed, options.num_devices));
    }
    if (plan->memory.pipeline_parallel > 1) {
        plan->warnings.push_back("pipeline stages run one after another: TPOT and TTFT are lower bounds");
    }
    if (plan->memory.tensor_parallel > 1) {
        plan->warnings.push_back("tensor-parallel all-reduce time is not modelled: throughput is an upper bound");
    }
}

void add_what_if(Plan* plan) {
    for (DType weight_type : {DType::kQ8_0, DType::kQ4_0}) {
        for (DType kv_type : {DType::kF16, DType::kQ8_0}) {
            for (double headroom : {0.2, 0.1}) {
                PlanOptions variant = plan->options;
                variant.weight_type = weight_type;
                variant.weight_bytes.reset();
                variant.kv_type = kv_type;
                variant.headroom = headroom;
                variant.what_if = false;
                // The profile was measured with the plan's own types: carry its calibration over instead of
                // refitting it to weights and KV caches it never ran.
                if (plan->throughput && plan->throughput->calibration) {
                    variant.profile.clear();
                    variant.device.bandwidth_efficiency = plan->throughput->efficiency.bandwidth;
                    variant.device.compute_efficiency = plan->throughput->efficiency.compute;
                }
                Result<Plan> result = make_plan(variant);
                if (!result.is_ok()) continue;  // e.g. KV rows that q8_0 blocks cannot hold
                const Plan& other = result.value();
                WhatIfRow row;
                row.weight_type = weight_type;
                row.kv_type = kv_type;
                row.headroom = headroom;
                row.fits = other.fits;
                row.tensor_parallel = other.memory.tensor_parallel;
                row.pipeline_parallel = other.memory.pipeline_parallel;
                row.weight_bytes = other.weights.bytes;
                row.kv_bytes_per_request = other.kv_bytes_per_request;
                row.max_concurrent = other.memory.max_concurrent;
                row.recommended_concurrent = other.memory.recommended_concurrent;
                if (other.throughput && other.fits) {
                    row.output_tokens_per_s = other.throughput->planned.output_tokens_per_s;
                }
                row.devices_needed = other.devices.devices_needed;
                row.cost_per_million_output_tokens = other.cost_per_million_output_tokens;
                plan->what_if.push_back(row);
            }
        }
    }
}

}  // namespace

Result<Plan> make_plan(const PlanOptions& options) {
    TERN_RETURN_IF_ERROR(validate_options(options));
    Plan plan;
    plan.options = options;
    TERN_RETURN_IF_ERROR(fill_workload(options.profile, &plan.options.workload));
    const Workload& workload = plan.options.workload;
    plan.weights = choose_weights(plan.options, &plan.weight_source);
    plan.context_length = options.context_length > 0 ? options.context_length : options.model.context_length;
    plan.kv_bytes_per_token = kv_bytes_per_token(options.model, options.kv_type);
    plan.workspace_bytes = workspace_bytes(options.model, options.batch_tokens);
    const bool spread = workload.total
                            ? workload.total->p95 != workload.total->mean
                            : workload.input.p95 != workload.input.mean || workload.output.p95 != workload.output.mean;
    plan.planning_label = spread ? "P95" : "mean";
    const double requested_tokens = total_at(workload, spread ? "P95" : "mean");
    plan.planning_tokens = cap_tokens(requested_tokens, plan.context_length);
    plan.kv_bytes_per_request = plan.planning_tokens * plan.kv_bytes_per_token;

    Planner planner(plan.options, plan.weights, plan.planning_tokens);
    planner.calibrate_from(options.profile);
    const Candidate chosen = choose_layout(plan.options, planner);
    plan.memory = chosen.memory;
    plan.fits = chosen.memory.fits();
    plan.throughput = chosen.throughput;
    plan.devices = chosen.devices;
    plan.parallel_advice = parallel_advice(plan.options, chosen);
    plan.lengths = length_rows(plan, planner);
    add_cost(&plan);
    add_warnings(&plan, requested_tokens);
    if (options.what_if) add_what_if(&plan);
    return plan;
}

}  // namespace tern::plan

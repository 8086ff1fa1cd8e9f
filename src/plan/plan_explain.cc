// The explanation lines of a plan: each formula written out with the numbers it used.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "plan/kv_capacity.h"
#include "plan/plan_report.h"
#include "plan/units.h"
#include "synth/synth.h"

namespace tern::plan {
namespace {

std::string memory_term(const Plan& plan) {
    const int64_t devices = plan.memory.devices();
    if (devices == 1) return format_bytes(static_cast<double>(plan.memory.memory_bytes)) + " memory";
    return fmt::format("{} x {} memory", devices, format_bytes(static_cast<double>(plan.options.device.memory_bytes)));
}

std::string model_line(const ModelShape& model) {
    const std::string ffn = model.num_experts > 0
                                ? fmt::format("{} experts of {}, {} per token", model.num_experts,
                                              model.expert_ffn_dim, model.num_experts_used)
                                : fmt::format("FFN {}", model.ffn_dim);
    return fmt::format(
        "model: {} ({}, {}): {} layers, {} wide, {} heads / {} KV heads x {} head dim, {}, vocab {}{}", model.name,
        model.source, model.architecture, model.num_layers, model.embedding_dim, model.num_heads, model.num_kv_heads,
        model.head_dim, ffn, model.vocab_size,
        model.context_length > 0 ? fmt::format(", context {}", model.context_length) : "");
}

std::string weights_line(const Plan& plan) {
    const WeightFootprint& weights = plan.weights;
    const std::string bytes = format_bytes(static_cast<double>(weights.bytes));
    if (plan.weight_source == "given") return fmt::format("weights = {} (given)", bytes);
    if (plan.weight_source == "GGUF tensors") {
        return fmt::format("weights = {}: the sum of the GGUF's tensor sizes ({} params, most bytes in {})", bytes,
                           format_count(static_cast<double>(weights.num_params)), dtype_name(weights.type));
    }
    std::string note = "norms f32";
    const DType output_type = synth_tensor_type(weights.type, plan.options.model.embedding_dim, true);
    if (output_type != weights.type) note += fmt::format(", output matrix {}", dtype_name(output_type));
    return fmt::format(
        "weights = {} params at {} ({:.4g} bytes/param) = {} (from the shapes; {})",
        format_count(static_cast<double>(weights.num_params)), dtype_name(weights.type),
        static_cast<double>(dtype_traits(weights.type).block_bytes) / dtype_traits(weights.type).block_size, bytes,
        note);
}

std::string kv_token_line(const Plan& plan) {
    const ModelShape& model = plan.options.model;
    const double bytes_per_value =
        static_cast<double>(row_bytes(plan.options.kv_type, model.kv_dim())) / model.kv_dim();
    return fmt::format("KV per token = 2 x {} layers x {} KV heads x {} head dim x {:.4g} bytes ({}) = {} B ({})",
                       model.num_layers, model.num_kv_heads, model.head_dim, bytes_per_value,
                       dtype_name(plan.options.kv_type), plan.kv_bytes_per_token,
                       format_bytes(static_cast<double>(plan.kv_bytes_per_token)));
}

std::string kv_request_line(const Plan& plan) {
    const Workload& workload = plan.options.workload;
    const bool p95 = plan.planning_label == "P95";
    std::string origin;
    if (workload.total) {
        origin = fmt::format("{} of input+output in the length file", plan.planning_label);
    } else if (p95) {
        origin = fmt::format("{:.0f} in + {:.0f} out at P95", workload.input.p95, workload.output.p95);
    } else {
        origin = fmt::format("{:.0f} in + {:.0f} out{}", workload.input.mean, workload.output.mean,
                             workload.lengths_source == "flags" ? "" : ", " + workload.lengths_source + " lengths");
    }
    const int64_t paged = plan.memory.blocks_per_request * plan.memory.block_bytes;
    const ModelShape& model = plan.options.model;
    const KvLayout layout = kv_layout(model);
    const int64_t sliding = std::count_if(layout.group_windows.begin(), layout.group_windows.end(),
                                          [](int window) { return window > 0; });
    const std::string blocks =
        sliding == 0 ? fmt::format("ceil({} / {})", plan.planning_tokens, plan.options.block_size)
                     : fmt::format("{} KV groups of {} layers, {} of them sliding over {} tokens (window and a "
                                   "{}-token step each)", layout.group_windows.size(), layout.layers_per_block,
                                   sliding, model.sliding_window, plan.options.batch_tokens);
    return fmt::format(
        "KV per request = {} tokens ({}) x {} B = {}; paged: {} = {} blocks x {} = {}", plan.planning_tokens, origin,
        plan.kv_bytes_per_token, format_bytes(static_cast<double>(plan.kv_bytes_per_request)), blocks,
        plan.memory.blocks_per_request, format_bytes(static_cast<double>(plan.memory.block_bytes)),
        format_bytes(static_cast<double>(paged)));
}

void add_memory_lines(const Plan& plan, std::vector<std::string>* lines) {
    const ReplicaMemory& memory = plan.memory;
    const ModelShape& model = plan.options.model;
    const auto bytes = [](int64_t value) { return format_bytes(static_cast<double>(value)); };
    lines->push_back(fmt::format("max concurrent (theory) = floor(({} - {} weights) / {} per request) = {}",
                                 memory_term(plan), bytes(memory.weight_bytes), bytes(memory.request_bytes),
                                 memory.max_concurrent));
    lines->push_back(
        fmt::format("workspace per device = {} batch tokens x 4 B x ({} + {} + {} + {} + {} + {} logits) = {}{}",
                    plan.options.batch_tokens, 2 * model.embedding_dim, 2 * model.q_dim(), 2 * model.kv_dim(),
                    2 * model.ffn_dim, model.head_dim, model.vocab_size, bytes(plan.workspace_bytes),
                    memory.devices() > 1
                        ? fmt::format(" at tensor parallel 1; {} for the whole replica", bytes(memory.workspace_bytes))
                        : ""));
    const std::string budget =
        plan.options.kv_budget_bytes
            ? fmt::format("KV budget = {} (given)", bytes(memory.kv_budget_bytes))
            : fmt::format("KV budget = ({} - {} - {}) x (1 - {:.0f}% headroom) = {}", memory_term(plan),
                          bytes(memory.weight_bytes), bytes(memory.workspace_bytes), plan.options.headroom * 100,
                          bytes(memory.kv_budget_bytes));
    lines->push_back(fmt::format("{} -> floor({} B / {} B per {}-token block) = {} blocks = {} tokens", budget,
                                 memory.kv_budget_bytes, memory.block_bytes, plan.options.block_size, memory.kv_blocks,
                                 memory.kv_capacity_tokens));
    lines->push_back(fmt::format("recommended concurrent = floor({} blocks / {} blocks per request) = {}",
                                 memory.kv_blocks, memory.blocks_per_request, memory.recommended_concurrent));
}

void add_perf_lines(const Plan& plan, std::vector<std::string>* lines) {
    const ThroughputPlan& perf = *plan.throughput;
    const Workload& workload = plan.options.workload;
    const double concurrency = static_cast<double>(perf.concurrency);
    const double context = workload.input.mean + workload.output.mean / 2;
    const std::string bandwidth =
        fmt::format("({} x {:.2f})", format_rate(perf.replica_bandwidth, "B/s"), perf.efficiency.bandwidth);
    const std::string peak =
        fmt::format("({} x {:.2f})", format_rate(perf.replica_peak_ops, "OP/s"), perf.efficiency.compute);
    const double attention = 4.0 * static_cast<double>(plan.options.model.num_layers * plan.options.model.num_heads *
                                                       plan.options.model.head_dim);
    const std::string matmul = format_count(static_cast<double>(plan.weights.matmul_params));
    lines->push_back(fmt::format("efficiency: {:.2f} of peak bandwidth, {:.2f} of the {} peak ({})",
                                 perf.efficiency.bandwidth, perf.efficiency.compute,
                                 perf.int8_compute ? "int8" : "16-bit float", perf.efficiency_source));
    lines->push_back(
        fmt::format("decode step = ({} weights + {:.0f} requests x {:.0f} context x {} B) / {} + {:.0f} x (2 x {} "
                    "params + {:.4g} x {:.0f} context) ops / {} = {}",
                    format_bytes(static_cast<double>(plan.weights.matmul_bytes)), concurrency, context,
                    plan.memory.kv_bytes_per_token, bandwidth, concurrency, matmul, attention, context, peak,
                    format_ms(perf.planned.step_s)));
    lines->push_back(
        fmt::format("prefill of {:.0f} tokens = ceil({:.0f} / {}) x {} / {} + (2 x {} x {:.0f} + {:.4g} x {:.0f}^2 "
                    "/ 2) ops / {} = {}",
                    workload.input.mean, workload.input.mean, plan.options.batch_tokens,
                    format_bytes(static_cast<double>(plan.weights.matmul_bytes)), bandwidth, matmul,
                    workload.input.mean, attention, workload.input.mean, peak, format_ms(perf.planned.prefill_s)));
    lines->push_back(
        fmt::format("TPOT = step + {:.0f} x prefill / {:.0f} output tokens = {}; TTFT = prefill + step = {} "
                    "(P95 prompt of {:.0f}: {}, P99 of {:.0f}: {})",
                    concurrency, workload.output.mean, format_ms(perf.planned.tpot_s), format_ms(perf.planned.ttft_s),
                    workload.input.p95, format_ms(perf.ttft_p95_s), workload.input.p99, format_ms(perf.ttft_p99_s)));
    lines->push_back(
        fmt::format("throughput = {:.0f} requests / TPOT = {:.1f} output tokens/s = {:.3g} requests/s per replica "
                    "(concurrency limited by {})",
                    concurrency, perf.planned.output_tokens_per_s, perf.planned.requests_per_s, perf.bound));
}

void add_device_lines(const Plan& plan, std::vector<std::string>* lines) {
    const Workload& workload = plan.options.workload;
    const DeviceCount& count = plan.devices;
    if (plan.throughput && workload.peak_requests_per_s > 0) {
        const PerfPoint& planned = plan.throughput->planned;
        lines->push_back(fmt::format(
            "at the peak: in flight = {:.3g} req/s x ({} + {:.0f} x {}) = {:.1f} requests; by memory ceil({:.1f} / {}) "
            "and by throughput ceil({:.3g} / {:.3g}) replicas -> {} replicas x {} device(s) = {} devices",
            workload.peak_requests_per_s, format_ms(planned.ttft_s), workload.output.mean, format_ms(planned.tpot_s),
            count.concurrent_at_peak, count.concurrent_at_peak, plan.memory.recommended_concurrent,
            workload.peak_requests_per_s, planned.requests_per_s, count.replicas, plan.memory.devices(),
            count.devices_needed));
    }
    if (count.capacity_requests_per_s > 0) {
        const int64_t available = plan.options.num_devices;
        lines->push_back(fmt::format("with {} devices available: {} replicas x {:.3g} req/s = {:.3g} requests/s",
                                     available, available / plan.memory.devices(),
                                     plan.throughput->planned.requests_per_s, count.capacity_requests_per_s));
    }
    if (plan.cost_per_million_output_tokens) {
        lines->push_back(
            fmt::format("cost per 1M output tokens = {} device(s) x {:.4g}/h / ({:.1f} tokens/s x 3600) x 1e6 = {:.4g}",
                        plan.memory.devices(), plan.options.device_hour_cost,
                        plan.throughput->planned.output_tokens_per_s, *plan.cost_per_million_output_tokens));
    }
    if (plan.cost_per_million_at_peak) {
        lines->push_back(
            fmt::format("cost per 1M output tokens while the peak lasts = {} devices x {:.4g}/h / ({:.3g} req/s x "
                        "{:.0f} tokens x 3600) x 1e6 = {:.4g}",
                        count.devices_needed, plan.options.device_hour_cost, workload.peak_requests_per_s,
                        workload.output.mean, *plan.cost_per_million_at_peak));
    }
}

}  // namespace

std::vector<std::string> explain(const Plan& plan) {
    std::vector<std::string> lines;
    lines.push_back(model_line(plan.options.model));
    lines.push_back(weights_line(plan));
    lines.push_back(kv_token_line(plan));
    lines.push_back(kv_request_line(plan));
    add_memory_lines(plan, &lines);
    lines.push_back("layout: " + plan.parallel_advice);
    if (plan.throughput) add_perf_lines(plan, &lines);
    add_device_lines(plan, &lines);
    return lines;
}

}  // namespace tern::plan

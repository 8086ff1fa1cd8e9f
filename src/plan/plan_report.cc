#include "plan/plan_report.h"

#include <fmt/format.h>

#include "plan/units.h"

namespace tern::plan {
namespace {

using nlohmann::json;

json optional_number(const std::optional<double>& value) { return value ? json(*value) : json(nullptr); }

json latency_json(const LatencySummary& summary) {
    json out = json::object();
    if (summary.mean) out["mean"] = *summary.mean;
    if (summary.p50) out["p50"] = *summary.p50;
    if (summary.p90) out["p90"] = *summary.p90;
    if (summary.p95) out["p95"] = *summary.p95;
    if (summary.p99) out["p99"] = *summary.p99;
    return out;
}

json perf_point_json(const PerfPoint& point) {
    return {{"concurrency", point.concurrency},      {"step_ms", point.step_s * 1e3},
            {"prefill_ms", point.prefill_s * 1e3},   {"tpot_ms", point.tpot_s * 1e3},
            {"ttft_ms", point.ttft_s * 1e3},         {"output_tokens_per_s", point.output_tokens_per_s},
            {"requests_per_s", point.requests_per_s}};
}

json model_json(const Plan& plan) {
    const ModelShape& model = plan.options.model;
    return {{"name", model.name},
            {"source", model.source},
            {"architecture", model.architecture},
            {"num_layers", model.num_layers},
            {"embedding_dim", model.embedding_dim},
            {"num_heads", model.num_heads},
            {"num_kv_heads", model.num_kv_heads},
            {"head_dim", model.head_dim},
            {"ffn_dim", model.ffn_dim},
            {"vocab_size", model.vocab_size},
            {"context_length", model.context_length},
            {"num_params", plan.weights.num_params},
            {"weight_type", dtype_name(plan.weights.type)},
            {"weight_source", plan.weight_source}};
}

json device_json(const Plan& plan) {
    const DeviceSpec& device = plan.options.device;
    return {{"name", device.name},
            {"description", device.description},
            {"memory_bytes", device.memory_bytes},
            {"bandwidth_bytes_per_s", device.bandwidth_bytes_per_s},
            {"fp16_flops", device.fp16_flops},
            {"int8_ops", device.int8_ops},
            {"available", plan.options.num_devices},
            {"hour_cost", plan.options.device_hour_cost > 0 ? json(plan.options.device_hour_cost) : json(nullptr)}};
}

json workload_json(const Workload& workload) {
    const auto stats = [](const LengthStats& s) {
        return json{{"mean", s.mean}, {"p50", s.p50}, {"p95", s.p95}, {"p99", s.p99}};
    };
    json out = {{"input_tokens", stats(workload.input)},     {"output_tokens", stats(workload.output)},
                {"lengths_source", workload.lengths_source}, {"peak_requests_per_s", workload.peak_requests_per_s},
                {"slo_ttft_ms", workload.slo_ttft_ms},       {"slo_tpot_ms", workload.slo_tpot_ms}};
    if (workload.total) out["total_tokens"] = stats(*workload.total);
    return out;
}

json kv_json(const Plan& plan) {
    const ReplicaMemory& memory = plan.memory;
    return {{"type", dtype_name(plan.options.kv_type)},
            {"block_size", plan.options.block_size},
            {"block_bytes", memory.block_bytes},
            {"headroom", plan.options.headroom},
            {"memory_bytes", memory.memory_bytes},
            {"workspace_bytes", memory.workspace_bytes},
            {"free_bytes", memory.free_bytes},
            {"budget_bytes", memory.kv_budget_bytes},
            {"blocks", memory.kv_blocks},
            {"capacity_tokens", memory.kv_capacity_tokens},
            {"request_tokens", memory.request_tokens},
            {"blocks_per_request", memory.blocks_per_request},
            {"planning_length", plan.planning_label}};
}

json throughput_json(const ThroughputPlan& perf) {
    json out = {{"bandwidth_efficiency", perf.efficiency.bandwidth},
                {"compute_efficiency", perf.efficiency.compute},
                {"efficiency_source", perf.efficiency_source},
                {"int8_compute", perf.int8_compute},
                {"replica_bandwidth_bytes_per_s", perf.replica_bandwidth},
                {"replica_peak_ops", perf.replica_peak_ops},
                {"concurrency", perf.concurrency},
                {"bound", perf.bound},
                {"slo_met", perf.slo_met},
                {"planned", perf_point_json(perf.planned)},
                {"ttft_p95_ms", perf.ttft_p95_s * 1e3},
                {"ttft_p99_ms", perf.ttft_p99_s * 1e3},
                {"by_concurrency", json::array()}};
    for (const PerfPoint& point : perf.table) out["by_concurrency"].push_back(perf_point_json(point));
    return out;
}

json calibration_json(const Calibration& calibration) {
    json checks = json::array();
    for (const CalibrationCheck& check : calibration.checks) {
        checks.push_back({{"concurrency", check.measured.concurrency},
                          {"input_tokens", check.input_tokens},
                          {"output_tokens", check.output_tokens},
                          {"measured_output_tokens_per_s", check.measured.output_tokens_per_s},
                          {"predicted_output_tokens_per_s", check.predicted.output_tokens_per_s},
                          {"measured_ttft_ms", latency_json(check.measured.ttft_ms)},
                          {"predicted_ttft_ms", check.predicted.ttft_s * 1e3},
                          {"measured_tpot_ms", latency_json(check.measured.tpot_ms)},
                          {"predicted_tpot_ms", check.predicted.tpot_s * 1e3}});
    }
    return {{"method", calibration.method},
            {"bandwidth_efficiency", calibration.efficiency.bandwidth},
            {"compute_efficiency", calibration.efficiency.compute},
            {"points", checks}};
}

json what_if_json(const std::vector<WhatIfRow>& rows) {
    json out = json::array();
    for (const WhatIfRow& row : rows) {
        out.push_back({{"weight_type", dtype_name(row.weight_type)},
                       {"kv_type", dtype_name(row.kv_type)},
                       {"headroom", row.headroom},
                       {"fits", row.fits},
                       {"tensor_parallel", row.tensor_parallel},
                       {"pipeline_parallel", row.pipeline_parallel},
                       {"weight_bytes", row.weight_bytes},
                       {"kv_bytes_per_request", row.kv_bytes_per_request},
                       {"max_concurrent_requests", row.max_concurrent},
                       {"recommended_concurrent_requests", row.recommended_concurrent},
                       {"output_tokens_per_s", optional_number(row.output_tokens_per_s)},
                       {"devices_needed", row.devices_needed},
                       {"cost_per_million_output_tokens", optional_number(row.cost_per_million_output_tokens)}});
    }
    return out;
}

}  // namespace

json plan_json(const Plan& plan) {
    json out;
    out["weight_bytes"] = plan.weights.bytes;
    out["kv_bytes_per_token"] = plan.kv_bytes_per_token;
    out["kv_bytes_per_request"] = plan.kv_bytes_per_request;
    out["max_concurrent_requests"] = plan.memory.max_concurrent;
    out["recommended_concurrent_requests"] = plan.memory.recommended_concurrent;
    out["devices_needed"] = plan.devices.devices_needed;
    if (plan.options.device_hour_cost > 0) {
        out["cost_per_million_output_tokens"] = optional_number(plan.cost_per_million_output_tokens);
        out["cost_per_million_output_tokens_at_peak"] = optional_number(plan.cost_per_million_at_peak);
    }
    out["fits"] = plan.fits;
    out["model"] = model_json(plan);
    out["device"] = device_json(plan);
    out["workload"] = workload_json(plan.options.workload);
    out["kv_cache"] = kv_json(plan);
    out["lengths"] = json::array();
    for (const LengthRow& row : plan.lengths) {
        out["lengths"].push_back({{"label", row.label},
                                  {"tokens", row.tokens},
                                  {"kv_bytes", row.kv_bytes},
                                  {"blocks", row.blocks},
                                  {"max_concurrent_requests", row.max_concurrent},
                                  {"recommended_concurrent_requests", row.recommended_concurrent}});
    }
    out["parallelism"] = {{"tensor_parallel", plan.memory.tensor_parallel},
                          {"pipeline_parallel", plan.memory.pipeline_parallel},
                          {"devices_per_replica", plan.memory.devices()},
                          {"replicas", plan.devices.replicas},
                          {"advice", plan.parallel_advice}};
    out["devices"] = {{"devices_needed", plan.devices.devices_needed},
                      {"devices_by_memory", plan.devices.devices_by_memory},
                      {"devices_by_throughput", plan.devices.devices_by_throughput},
                      {"concurrent_requests_at_peak", plan.devices.concurrent_at_peak},
                      {"capacity_requests_per_s", plan.devices.capacity_requests_per_s}};
    out["throughput"] = plan.throughput ? throughput_json(*plan.throughput) : json(nullptr);
    out["calibration"] = plan.throughput && plan.throughput->calibration
                             ? calibration_json(*plan.throughput->calibration)
                             : json(nullptr);
    out["what_if"] = what_if_json(plan.what_if);
    out["explanation"] = explain(plan);
    out["warnings"] = plan.warnings;
    return out;
}

namespace {

void append_tables(const Plan& plan, std::string* text) {
    *text += fmt::format("\nKV need by request length ({} KV, per replica of {} device(s)):\n",
                         dtype_name(plan.options.kv_type), plan.memory.devices());
    *text += fmt::format("  {:<8} {:>8} {:>12} {:>7} {:>15} {:>12}\n", "length", "tokens", "KV bytes", "blocks",
                         "max (theory)", "recommended");
    for (const LengthRow& row : plan.lengths) {
        *text += fmt::format("  {:<8} {:>8} {:>12} {:>7} {:>15} {:>12}\n", row.label, row.tokens,
                             format_bytes(static_cast<double>(row.kv_bytes)), row.blocks, row.max_concurrent,
                             row.recommended_concurrent);
    }
    if (plan.throughput) {
        *text += "\nper replica by concurrency (mean lengths):\n";
        *text += fmt::format("  {:>11} {:>10} {:>10} {:>14} {:>10}\n", "concurrency", "TPOT", "TTFT", "output tok/s",
                             "req/s");
        for (const PerfPoint& point : plan.throughput->table) {
            *text += fmt::format("  {:>11.0f} {:>10} {:>10} {:>14.1f} {:>10.3g}\n", point.concurrency,
                                 format_ms(point.tpot_s), format_ms(point.ttft_s), point.output_tokens_per_s,
                                 point.requests_per_s);
        }
    }
    if (plan.throughput && plan.throughput->calibration) {
        *text += fmt::format("\ncalibration ({}):\n", plan.throughput->calibration->method);
        for (const CalibrationCheck& check : plan.throughput->calibration->checks) {
            *text += fmt::format(
                "  concurrency {:.0f} ({:.0f} in, {:.0f} out): measured {:.1f} tok/s, model {:.1f} tok/s ({:+.0f}%)",
                check.measured.concurrency, check.input_tokens, check.output_tokens, check.measured.output_tokens_per_s,
                check.predicted.output_tokens_per_s,
                (check.predicted.output_tokens_per_s / check.measured.output_tokens_per_s - 1) * 100);
            if (const std::optional<double> ttft = check.measured.ttft_ms.typical()) {
                *text += fmt::format("; TTFT {:.0f} ms, model {:.0f} ms", *ttft, check.predicted.ttft_s * 1e3);
            }
            if (const std::optional<double> tpot = check.measured.tpot_ms.typical()) {
                *text += fmt::format("; TPOT {:.0f} ms, model {:.0f} ms", *tpot, check.predicted.tpot_s * 1e3);
            }
            *text += "\n";
        }
    }
}

void append_what_if(const Plan& plan, std::string* text) {
    if (plan.what_if.empty()) return;
    *text += "\nwhat if (weights from the shapes):\n";
    *text += fmt::format("  {:<7} {:<5} {:>8} {:>10} {:>11} {:>8} {:>11} {:>7} {:>12} {:>8} {:>10}\n", "weights", "KV",
                         "headroom", "weight", "KV/request", "max", "recommended", "layout", "tok/s/rep", "devices",
                         "cost/1M");
    for (const WhatIfRow& row : plan.what_if) {
        *text += fmt::format(
            "  {:<7} {:<5} {:>7.0f}% {:>10} {:>11} {:>8} {:>11} {:>7} {:>12} {:>8} {:>10}\n",
            dtype_name(row.weight_type), dtype_name(row.kv_type), row.headroom * 100,
            format_bytes(static_cast<double>(row.weight_bytes)),
            format_bytes(static_cast<double>(row.kv_bytes_per_request)), row.max_concurrent, row.recommended_concurrent,
            fmt::format("{}x{}", row.tensor_parallel, row.pipeline_parallel),
            row.output_tokens_per_s ? fmt::format("{:.1f}", *row.output_tokens_per_s) : "-",
            row.fits ? std::to_string(row.devices_needed) : "no fit",
            row.cost_per_million_output_tokens ? fmt::format("{:.4g}", *row.cost_per_million_output_tokens) : "-");
    }
}

}  // namespace

std::string plan_text(const Plan& plan) {
    const PlanOptions& options = plan.options;
    std::string text = fmt::format("tern plan: {} on {} ({}), {} weights, {} KV cache, {:.0f}% headroom\n",
                                   options.model.name, options.device.name, options.device.description,
                                   dtype_name(plan.weights.type), dtype_name(options.kv_type), options.headroom * 100);
    text += "\nhow:\n";
    for (const std::string& line : explain(plan)) text += "  " + line + "\n";
    text += "\nsummary:\n";
    text += fmt::format("  weight bytes                      {} ({})\n", plan.weights.bytes,
                        format_bytes(static_cast<double>(plan.weights.bytes)));
    text += fmt::format("  KV bytes per token                {}\n", plan.kv_bytes_per_token);
    text += fmt::format("  KV bytes per request ({:<4})       {} ({} tokens)\n", plan.planning_label,
                        plan.kv_bytes_per_request, plan.planning_tokens);
    text += fmt::format("  max concurrent requests (theory)  {}\n", plan.memory.max_concurrent);
    text += fmt::format("  recommended concurrent requests   {}\n", plan.memory.recommended_concurrent);
    text += fmt::format("  KV cache                          {} blocks of {} tokens = {} tokens\n",
                        plan.memory.kv_blocks, options.block_size, plan.memory.kv_capacity_tokens);
    text += fmt::format("  layout                            {}\n", plan.parallel_advice);
    text += fmt::format("  devices needed                    {}\n",
                        plan.fits ? std::to_string(plan.devices.devices_needed) : "-");
    if (plan.cost_per_million_output_tokens) {
        text += fmt::format("  cost per 1M output tokens         {:.4g}\n", *plan.cost_per_million_output_tokens);
    }
    append_tables(plan, &text);
    append_what_if(plan, &text);
    for (const std::string& warning : plan.warnings) text += "warning: " + warning + "\n";
    return text;
}

}  // namespace tern::plan

// tern plan: capacity and cost from model + hardware + workload (issue 7). Flags -> PlanOptions -> make_plan.
#include <fmt/format.h>

#include <algorithm>
#include <iostream>

#include "apps/commands.h"
#include "doctor/machine_facts.h"
#include "plan/plan_report.h"
#include "plan/planner.h"
#include "plan/units.h"
#include "store/model_ref.h"
#include "store/resolve.h"
#include "synth/presets.h"

namespace tern::apps {
namespace {

struct PlanCommandOptions {
    std::string model;
    std::string weight_type;
    std::string weight_bytes;
    std::string kv_type = "f16";
    std::string device;
    std::string device_memory;
    double device_bandwidth_gbs = 0;
    double device_fp16_tflops = 0;
    double device_int8_tops = 0;
    double bandwidth_efficiency = 0;
    double compute_efficiency = 0;
    int64_t num_devices = 0;
    int64_t tensor_parallel = 0;
    int64_t pipeline_parallel = 0;
    std::string headroom = "20%";
    std::string kv_budget;
    int64_t context_length = 0;
    int64_t block_size = plan::kDefaultBlockSize;
    int64_t batch_tokens = 512;
    plan::LengthStats input;
    plan::LengthStats output;
    std::string lengths_file;
    std::string profile_file;
    double peak_requests_per_s = 0;
    double slo_ttft_ms = 0;
    double slo_tpot_ms = 0;
    double device_hour_cost = 0;
    bool json = false;
    bool list = false;
};

void print_presets() {
    std::cout << "model presets (--model NAME):\n";
    for (const ModelPreset& preset : model_presets()) {
        if (preset.name.rfind("tiny", 0) == 0 && preset.name != "tinyllama-1.1b") continue;
        std::cout << fmt::format("  {:<16} {}\n", preset.name, preset.description);
    }
    std::cout << "device presets (--device NAME):\n";
    for (const plan::DeviceSpec& device : plan::device_presets()) {
        std::cout << fmt::format("  {:<10} {:>9} {:>11} {:>13} {:>13}  {}\n", device.name,
                                 plan::format_bytes(static_cast<double>(device.memory_bytes)),
                                 plan::format_rate(device.bandwidth_bytes_per_s, "B/s"),
                                 plan::format_rate(device.fp16_flops, "FLOP/s"),
                                 plan::format_rate(device.int8_ops, "OP/s"), device.description);
    }
}

// --device local: this machine as `tern doctor` sees it, measured now (a few seconds): the memory this process can
// take, the read bandwidth, the fp32 FMA and int8 peaks of its usable cores; the cpu preset's efficiencies on top.
plan::DeviceSpec measure_local_device() {
    plan::DeviceSpec device = *plan::find_device("cpu");
    const doctor::MachineFacts facts = doctor::read_machine_facts();
    ThreadPool pool(std::max(1, facts.usable_cores));
    device.name = "local";
    device.description = fmt::format("this machine, measured now: {} ({} cores, {} kernels)", facts.cpu_model,
                                     facts.usable_cores, facts.kernels);
    device.memory_bytes = static_cast<int64_t>(facts.memory.bytes());
    const doctor::MeasuredCeilings ceilings = doctor::measure_ceilings(pool);
    device.bandwidth_bytes_per_s = ceilings.read_bytes_per_s;
    if (ceilings.int8_ops_per_s > 0) {  // else the preset's
        device.fp16_flops = ceilings.fp32_flops;
        device.int8_ops = ceilings.int8_ops_per_s;
    }
    return device;
}

Result<plan::DeviceSpec> resolve_device(const PlanCommandOptions& options) {
    plan::DeviceSpec device;
    if (options.device == "local") {
        device = measure_local_device();
    } else if (!options.device.empty()) {
        const std::optional<plan::DeviceSpec> preset = plan::find_device(options.device);
        if (!preset) {
            return invalid_argument(fmt::format("unknown device '{}'; choose one of: {}, local (this machine, "
                                                "measured now) (or give --device-mem)",
                                                options.device, plan::device_preset_names()));
        }
        device = *preset;
    } else if (!options.device_memory.empty()) {
        device.name = "custom";
        device.description = "given on the command line";
    } else {
        return invalid_argument(
            fmt::format("choose a device: --device NAME ({}) or --device-mem SIZE", plan::device_preset_names()));
    }
    if (!options.device_memory.empty()) {
        TERN_ASSIGN_OR_RETURN(device.memory_bytes, plan::parse_memory_size(options.device_memory));
    }
    if (options.device_bandwidth_gbs > 0) device.bandwidth_bytes_per_s = options.device_bandwidth_gbs * 1e9;
    if (options.device_fp16_tflops > 0) device.fp16_flops = options.device_fp16_tflops * 1e12;
    if (options.device_int8_tops > 0) device.int8_ops = options.device_int8_tops * 1e12;
    if (options.bandwidth_efficiency > 0) device.bandwidth_efficiency = options.bandwidth_efficiency;
    if (options.compute_efficiency > 0) device.compute_efficiency = options.compute_efficiency;
    return device;
}

Result<DType> parse_type(const std::string& name, const char* what) {
    const std::optional<DType> type = dtype_from_name(name);
    if (!type)
        return invalid_argument(fmt::format("unknown {} type '{}' (examples: f16, q8_0, q4_0, q4_K)", what, name));
    return *type;
}

// A preset, a GGUF or config.json path, else a model store name if the store has it.
Result<plan::ModelShape> load_shape(const std::string& model) {
    Result<plan::ModelShape> shape = plan::load_model_shape(model);
    if (shape.is_ok()) return shape;
    Result<store::ResolvedModel> stored = store::resolve_model_argument(model, store::store_root());
    if (stored.is_ok()) return plan::load_model_shape(stored.value().path);
    return Status(shape.status().code(),
                  shape.status().message() + ", nor a model in the store at " + store::store_root());
}

Result<plan::PlanOptions> build_options(const PlanCommandOptions& options) {
    plan::PlanOptions plan_options;
    if (options.model.empty())
        return invalid_argument("--model is required (a preset name, a GGUF file or a config.json)");
    TERN_ASSIGN_OR_RETURN(plan_options.model, load_shape(options.model));
    if (!options.weight_type.empty()) {
        TERN_ASSIGN_OR_RETURN(plan_options.weight_type, parse_type(options.weight_type, "weight"));
    }
    if (!options.weight_bytes.empty()) {
        TERN_ASSIGN_OR_RETURN(plan_options.weight_bytes, plan::parse_memory_size(options.weight_bytes));
    }
    TERN_ASSIGN_OR_RETURN(plan_options.kv_type, parse_type(options.kv_type, "KV cache"));
    TERN_ASSIGN_OR_RETURN(plan_options.device, resolve_device(options));
    TERN_ASSIGN_OR_RETURN(plan_options.headroom, plan::parse_fraction(options.headroom));
    if (!options.kv_budget.empty()) {
        TERN_ASSIGN_OR_RETURN(plan_options.kv_budget_bytes, plan::parse_memory_size(options.kv_budget));
    }
    plan_options.num_devices = options.num_devices;
    plan_options.tensor_parallel = options.tensor_parallel;
    plan_options.pipeline_parallel = options.pipeline_parallel;
    plan_options.context_length = options.context_length;
    plan_options.block_size = options.block_size;
    plan_options.batch_tokens = options.batch_tokens;
    plan_options.device_hour_cost = options.device_hour_cost;
    plan::Workload& workload = plan_options.workload;
    if (!options.lengths_file.empty()) {
        const plan::LengthStats none;
        for (const plan::LengthStats* stats : {&options.input, &options.output}) {
            if (stats->mean != none.mean || stats->p50 != none.p50 || stats->p95 != none.p95 ||
                stats->p99 != none.p99) {
                return invalid_argument(
                    "give request lengths either with --lengths or with the length flags, not both");
            }
        }
        TERN_RETURN_IF_ERROR(plan::read_length_file(options.lengths_file, &workload));
    } else {
        workload.input = options.input;
        workload.output = options.output;
    }
    workload.peak_requests_per_s = options.peak_requests_per_s;
    workload.slo_ttft_ms = options.slo_ttft_ms;
    workload.slo_tpot_ms = options.slo_tpot_ms;
    if (!options.profile_file.empty()) {
        TERN_ASSIGN_OR_RETURN(plan_options.profile, plan::read_profile(options.profile_file));
    }
    return plan_options;
}

Status run_plan(const PlanCommandOptions& options) {
    if (options.list) {
        print_presets();
        return Status::ok();
    }
    TERN_ASSIGN_OR_RETURN(plan::PlanOptions plan_options, build_options(options));
    TERN_ASSIGN_OR_RETURN(plan::Plan result, plan::make_plan(plan_options));
    if (options.json) {
        std::cout << plan::plan_json(result).dump(1) << "\n";
    } else {
        std::cout << plan::plan_text(result);
    }
    return Status::ok();
}

void add_length_flags(CLI::App* command, PlanCommandOptions* options) {
    command->add_option("--input-len", options->input.mean, "Mean prompt tokens (default 512)");
    command->add_option("--input-p50", options->input.p50, "Median prompt tokens");
    command->add_option("--input-p95", options->input.p95, "P95 prompt tokens");
    command->add_option("--input-p99", options->input.p99, "P99 prompt tokens");
    command->add_option("--output-len", options->output.mean, "Mean output tokens (default 256)");
    command->add_option("--output-p50", options->output.p50, "Median output tokens");
    command->add_option("--output-p95", options->output.p95, "P95 output tokens");
    command->add_option("--output-p99", options->output.p99, "P99 output tokens");
    command->add_option("--lengths", options->lengths_file,
                        "File of real request lengths, one \"INPUT OUTPUT\" pair per line (replaces the length flags)");
}

void add_device_flags(CLI::App* command, PlanCommandOptions* options) {
    command->add_option("--device", options->device, "Device preset: " + plan::device_preset_names() +
                        ", or local (this machine, measured now: memory, bandwidth, peaks)");
    command->add_option("--device-mem", options->device_memory,
                        "Device memory: 24 or 24GB (10^9 bytes), 24GiB, 512MiB");
    command->add_option("--device-bw", options->device_bandwidth_gbs, "Device memory bandwidth, GB/s");
    command->add_option("--device-fp16-tflops", options->device_fp16_tflops, "Dense 16-bit float peak, TFLOP/s");
    command->add_option("--device-int8-tops", options->device_int8_tops, "Dense int8 peak, TOP/s");
    command->add_option("--bw-efficiency", options->bandwidth_efficiency, "Share of peak bandwidth reached (0-1]")
        ->check(CLI::Range(0.0, 1.0));
    command->add_option("--compute-efficiency", options->compute_efficiency, "Share of peak compute reached (0-1]")
        ->check(CLI::Range(0.0, 1.0));
    command->add_option("--devices", options->num_devices, "Devices available (default: as many as needed)");
    command->add_option("--tp", options->tensor_parallel, "Tensor-parallel degree (default: chosen)");
    command->add_option("--pp", options->pipeline_parallel, "Pipeline-parallel degree (default: chosen)");
    command->add_option("--device-hour-cost", options->device_hour_cost, "Price of one device for one hour");
}

}  // namespace

void register_plan(CLI::App& app) {
    auto options = std::make_shared<PlanCommandOptions>();
    CLI::App* command = app.add_subcommand("plan", "Capacity and cost planner: memory, concurrency, devices, cost");
    command->add_option(
        "-m,--model", options->model,
        "Model: a preset (" + plan::model_preset_names() + "), a GGUF file, a Hugging Face config.json or a model store NAME[@VERSION]");
    command->add_option("--weight-type", options->weight_type,
                        "Weight type (f16, q8_0, q4_0, q4_K, ...); default: the "
                        "GGUF's own bytes, else f16");
    command->add_option("--weight-bytes", options->weight_bytes, "Weight size as measured, e.g. 14GB (overrides)");
    command->add_option("--kv-type", options->kv_type, "KV cache type: f16, bf16, f32, q8_0, q4_0")
        ->capture_default_str();
    add_device_flags(command, options.get());
    command->add_option("--headroom", options->headroom, "Share of the KV budget kept free: 0.2 or 20%")
        ->capture_default_str();
    command->add_option("--kv-budget", options->kv_budget,
                        "KV-cache memory per replica given outright, e.g. 4GB (replaces memory - weights - workspace "
                        "- headroom; compare with tern serve)");
    command->add_option("--context", options->context_length,
                        "Longest request in tokens (default: the model's context)");
    command->add_option("--block-size", options->block_size, "Tokens per KV block")->capture_default_str();
    command->add_option("--batch-tokens", options->batch_tokens, "Tokens per forward pass")->capture_default_str();
    add_length_flags(command, options.get());
    command->add_option("--peak-rps", options->peak_requests_per_s, "Peak requests per second to serve");
    command->add_option("--slo-ttft-ms", options->slo_ttft_ms, "Target time to first token (P95 prompt), ms");
    command->add_option("--slo-tpot-ms", options->slo_tpot_ms, "Target time per output token, ms");
    command->add_option("--profile", options->profile_file,
                        "A `tern bench serve --save-result` JSON to calibrate with");
    command->add_flag("--json", options->json, "Print one JSON object");
    command->add_flag("--list", options->list, "List the model and device presets");
    set_action(command, [options] { return run_plan(*options); });
}

}  // namespace tern::apps

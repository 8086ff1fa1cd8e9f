// tern bench model: prefill (pp) and decode (tg) tokens/s as mean ± stddev over repetitions, like llama-bench;
// -b runs B sequences decoding together, -d runs every test after that many cached positions. tern bench memory: this
// machine's read and triad bandwidth.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "model_bench/model_bench.h"
#include "plan/model_shape.h"
#include "trace/trace.h"

namespace tern::apps {
namespace {

struct BenchModelOptions {
    std::string model_path;
    int64_t prompt_tokens = 512;
    int64_t generated_tokens = 128;
    int num_threads = 2;
    int repetitions = 5;
    std::vector<int64_t> batch_sizes;
    int64_t depth = 0;
    double warmup_seconds = 0.0;
    std::string kv_cache_type = "f16";
    bool measure_bandwidth = false;
    bool measure_peak = false;
    std::string trace_path;
    bool json = false;
};

nlohmann::json measurement_json(const Measurement& measurement) {
    return {{"mean", measurement.mean()}, {"stddev", measurement.stddev()}, {"samples", measurement.samples}};
}

void print_table(const nlohmann::json& report) {
    std::cout << fmt::format("model: {} ({} bytes), {} threads, kernels {}, KV cache {}\n",
                             report["model"].get<std::string>(), report["model_bytes"].get<int64_t>(),
                             report["threads"].get<int>(), report["isa"].get<std::string>(),
                             report["kv_cache_type"].get<std::string>());
    // llama-bench's names: "tg128 @ d4096" for a test after 4096 cached positions.
    const int64_t depth = report["depth"].get<int64_t>();
    const std::string at_depth = depth > 0 ? fmt::format(" @ d{}", depth) : "";
    std::cout << "| test | tokens/s |\n|---|---|\n";
    if (report.contains("pp_tokens_per_s")) {
        std::cout << fmt::format("| pp{}{} | {:.2f} ± {:.2f} |\n", report["prompt_tokens"].get<int64_t>(), at_depth,
                                 report["pp_tokens_per_s"].get<double>(), report["pp_stddev"].get<double>());
    }
    if (report.contains("tg_tokens_per_s")) {
        std::cout << fmt::format("| tg{}{} | {:.2f} ± {:.2f} |\n", report["generated_tokens"].get<int64_t>(), at_depth,
                                 report["tg_tokens_per_s"].get<double>(), report["tg_stddev"].get<double>());
    }
    for (const nlohmann::json& row : report["batched"]) {
        std::cout << fmt::format("| tg{}{} x B={} | {:.2f} ± {:.2f} |\n", report["generated_tokens"].get<int64_t>(),
                                 at_depth, row["batch"].get<int64_t>(), row["tokens_per_s"].get<double>(),
                                 row["stddev"].get<double>());
    }
    if (report.contains("read_gb_per_s")) {
        std::cout << fmt::format("read bandwidth {:.1f} GB/s (median); decode reads {:.1f} GB/s = {:.0f}% of it\n",
                                 report["read_gb_per_s"].get<double>(), report["tg_gb_per_s"].get<double>(),
                                 100.0 * report["tg_bandwidth_fraction"].get<double>());
    }
    if (report.contains("int8_peak_gops")) {
        std::cout << fmt::format("int8 peak {:.0f} GOP/s (median, {} threads); matrix work {:.2f} GOP per token\n",
                                 report["int8_peak_gops"].get<double>(), report["threads"].get<int>(),
                                 report["matmul_gop_per_token"].get<double>());
        for (const nlohmann::json& row : report["batched"]) {
            std::cout << fmt::format("B={}: {:.0f} GOP/s of matrix work = {:.0f}% of the peak\n",
                                     row["batch"].get<int64_t>(), row["matmul_gops"].get<double>(),
                                     100.0 * row["peak_fraction"].get<double>());
        }
    }
}

// Batched decode as matrix work against the int8 peak measured now (batched decode is compute-bound; the
// peak of a shared machine moves, so it is taken in the same run).
Status add_peak_share(const Model& model, ThreadPool& pool, nlohmann::json* report) {
    TERN_ASSIGN_OR_RETURN(const ComputePeak peak, measure_compute_peak(pool, 5));
    const double gop_per_token = static_cast<double>(model.hparams().matmul_ops_per_token()) / 1e9;
    (*report)["int8_peak_gops"] = peak.int8_gops.median();
    (*report)["matmul_gop_per_token"] = gop_per_token;
    for (nlohmann::json& row : (*report)["batched"]) {
        const double gops = row["tokens_per_s"].get<double>() * gop_per_token;
        row["matmul_gops"] = gops;
        row["peak_fraction"] = gops / peak.int8_gops.median();
    }
    return Status::ok();
}

Status run_bench_model(const BenchModelOptions& options) {
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<Model> model, Model::load(options.model_path));
    ThreadPool pool(options.num_threads);
    ModelBenchOptions bench;
    bench.prompt_tokens = options.prompt_tokens;
    bench.generated_tokens = options.generated_tokens;
    bench.repetitions = options.repetitions;
    bench.batch_sizes = options.batch_sizes;
    bench.depth = options.depth;
    bench.warmup_seconds = options.warmup_seconds;
    TERN_ASSIGN_OR_RETURN(bench.kv_type, parse_kv_type(options.kv_cache_type));
    trace::FileTrace trace(options.trace_path);
    TERN_RETURN_IF_ERROR(trace.start());
    TERN_ASSIGN_OR_RETURN(ModelBenchResult result, bench_model(*model, pool, bench));
    TERN_RETURN_IF_ERROR(trace.finish());
    nlohmann::json report = {{"model", options.model_path}, {"model_bytes", model->stored_weight_bytes()},
                             {"threads", options.num_threads}, {"isa", kernels::isa_name(model->kernel_table().isa)},
                             {"repetitions", options.repetitions}, {"prompt_tokens", options.prompt_tokens},
                             {"generated_tokens", options.generated_tokens}, {"depth", options.depth},
                             {"warmup_seconds", options.warmup_seconds},
                             {"kv_cache_type", options.kv_cache_type}, {"batched", nlohmann::json::array()}};
    if (options.prompt_tokens > 0) {
        report["pp_tokens_per_s"] = result.prefill_tokens_per_s.mean();
        report["pp_stddev"] = result.prefill_tokens_per_s.stddev();
    }
    if (options.generated_tokens > 0) {
        report["tg_tokens_per_s"] = result.decode_tokens_per_s.mean();
        report["tg_stddev"] = result.decode_tokens_per_s.stddev();
    }
    for (const auto& [batch, measurement] : result.batched_tokens_per_s) {
        report["batched"].push_back({{"batch", batch}, {"tokens_per_s", measurement.mean()},
                                     {"stddev", measurement.stddev()}});
    }
    if (options.measure_bandwidth && options.generated_tokens > 0) {
        // What a decode step reads per token: every matrix but an untied embedding (looked up by row), and of a
        // mixture's expert tensors the share a token uses (plan/model_shape's count over the file).
        auto shape = plan::model_shape_from_gguf(options.model_path);
        report["decode_bytes"] = shape.is_ok() && shape.value().file_matmul_bytes ? *shape.value().file_matmul_bytes
                                                                                  : report["model_bytes"].get<int64_t>();
        const MemoryBandwidth bandwidth = measure_memory_bandwidth(pool, int64_t{1} << 30, 5);
        const double decode_gb_per_s =
            report["tg_tokens_per_s"].get<double>() * report["decode_bytes"].get<double>() / 1e9;
        report["read_gb_per_s"] = bandwidth.read_gb_per_s.median();
        report["tg_gb_per_s"] = decode_gb_per_s;
        report["tg_bandwidth_fraction"] = decode_gb_per_s / bandwidth.read_gb_per_s.median();
    }
    if (options.measure_peak) TERN_RETURN_IF_ERROR(add_peak_share(*model, pool, &report));
    if (options.json) {
        std::cout << report.dump() << "\n";
    } else {
        print_table(report);
    }
    return Status::ok();
}

Status run_bench_memory(int num_threads, int64_t mebibytes, bool json) {
    ThreadPool pool(num_threads);
    const MemoryBandwidth bandwidth = measure_memory_bandwidth(pool, mebibytes << 20, 7);
    const nlohmann::json report = {{"threads", num_threads}, {"bytes", mebibytes << 20},
                                   {"read_gb_per_s", measurement_json(bandwidth.read_gb_per_s)},
                                   {"read_gb_per_s_median", bandwidth.read_gb_per_s.median()},
                                   {"triad_gb_per_s", measurement_json(bandwidth.triad_gb_per_s)},
                                   {"triad_gb_per_s_median", bandwidth.triad_gb_per_s.median()}};
    if (json) {
        std::cout << report.dump() << "\n";
    } else {
        std::cout << fmt::format("{} threads, {} MiB arrays: read {:.1f} GB/s median ({:.1f} best), triad {:.1f} GB/s "
                                 "median ({:.1f} best)\n", num_threads, mebibytes, bandwidth.read_gb_per_s.median(),
                                 bandwidth.read_gb_per_s.best(), bandwidth.triad_gb_per_s.median(),
                                 bandwidth.triad_gb_per_s.best());
    }
    return Status::ok();
}

Status run_bench_compute(int num_threads, bool json) {
    ThreadPool pool(num_threads);
    TERN_ASSIGN_OR_RETURN(const ComputePeak peak, measure_compute_peak(pool, 5));
    const nlohmann::json report = {{"threads", num_threads},
                                   {"kernels", kernels::isa_name(kernels::kernels().isa)},
                                   {"int8_gops", measurement_json(peak.int8_gops)},
                                   {"int8_gops_median", peak.int8_gops.median()},
                                   {"fp32_gflops", measurement_json(peak.fp32_gflops)},
                                   {"fp32_gflops_median", peak.fp32_gflops.median()}};
    if (json) {
        std::cout << report.dump() << "\n";
    } else {
        std::cout << fmt::format("{} threads: int8 dot products {:.0f} GOP/s median ({:.0f} best), fp32 FMA {:.0f} "
                                 "GFLOP/s median ({:.0f} best)\n", num_threads, peak.int8_gops.median(),
                                 peak.int8_gops.best(), peak.fp32_gflops.median(), peak.fp32_gflops.best());
    }
    return Status::ok();
}

}  // namespace

void register_bench_model(CLI::App& bench) {
    auto options = std::make_shared<BenchModelOptions>();
    CLI::App* command = bench.add_subcommand("model", "Prefill and decode tokens/s of a model (like llama-bench)");
    command->add_option("--trace", options->trace_path,
                        "Write a Chrome trace (JSON, for Perfetto) of the runs to FILE: each forward's layers");
    add_model_option(command, &options->model_path, "GGUF model file")->required();
    command->add_option("-p,--prompt-tokens", options->prompt_tokens, "Prefill length (0 skips)")->capture_default_str();
    command->add_option("-n,--gen-tokens", options->generated_tokens, "Decode length (0 skips)")->capture_default_str();
    add_threads_option(command, &options->num_threads);
    command->add_option("-r,--repetitions", options->repetitions, "Repetitions")->capture_default_str()
        ->check(CLI::Range(1, 1000));
    command->add_option("-b,--batch", options->batch_sizes, "Batched decode sizes, e.g. 1,4,16")->delimiter(',');
    command->add_option("-d,--depth", options->depth,
                        "Cached positions before each test, as llama-bench's -d (untimed prefill of random tokens)")
        ->capture_default_str();
    command->add_option("--warmup", options->warmup_seconds,
                        "Untimed prefill and decode rounds for at least this many seconds first (default: one round)")
        ->capture_default_str()->check(CLI::Range(0.0, 3600.0));
    command->add_option("--kv-cache-type", options->kv_cache_type, "KV element type: f16, q8_0 or f32")
        ->capture_default_str();
    command->add_flag("--membw", options->measure_bandwidth, "Also measure read bandwidth and report decode's share");
    command->add_flag("--peak", options->measure_peak,
                      "Also measure the int8 peak and report batched decode's matrix work as a share of it");
    command->add_flag("--json", options->json, "Print one JSON object");
    set_action(command, [options] { return run_bench_model(*options); });

    auto threads = std::make_shared<int>(2);
    auto mebibytes = std::make_shared<int64_t>(1024);
    auto json = std::make_shared<bool>(false);
    CLI::App* memory = bench.add_subcommand("memory", "Read-only and STREAM-triad memory bandwidth");
    add_threads_option(memory, threads.get());
    memory->add_option("--mib", *mebibytes, "MiB per array")->capture_default_str()->check(CLI::Range(1, 65536));
    memory->add_flag("--json", *json, "Print one JSON object");
    set_action(memory, [=] { return run_bench_memory(*threads, *mebibytes, *json); });

    auto compute_threads = std::make_shared<int>(2);
    auto compute_json = std::make_shared<bool>(false);
    CLI::App* compute = bench.add_subcommand("compute", "int8 dot-product and fp32 FMA peaks (the compute ceilings)");
    add_threads_option(compute, compute_threads.get());
    compute->add_flag("--json", *compute_json, "Print one JSON object");
    set_action(compute, [=] { return run_bench_compute(*compute_threads, *compute_json); });
}

}  // namespace tern::apps

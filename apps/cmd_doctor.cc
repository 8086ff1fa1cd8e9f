// tern doctor: the machine as tern sees it (CPU, kernels, cores, memory, huge pages, load), its read bandwidth and
// int8 peak measured now, and with -m what that predicts for a model (decode speed from bandwidth alone, full
// contexts that fit) plus a smoke generation; warnings say what to change.
#include <fmt/format.h>

#include <iostream>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "doctor/advice.h"
#include "generate/generator.h"
#include "plan/kv_capacity.h"
#include "plan/model_shape.h"
#include "tokenizer/tokenizer.h"

namespace tern::apps {
namespace {

struct DoctorOptions {
    std::string model_path;
    int num_threads = 2;
    bool json = false;
};

Result<doctor::ModelNeeds> model_needs(const std::string& path) {
    TERN_ASSIGN_OR_RETURN(plan::ModelShape shape, plan::model_shape_from_gguf(path));
    doctor::ModelNeeds needs;
    needs.path = path;
    needs.weight_bytes = shape.file_weight_bytes.value_or(0);
    needs.decode_bytes_per_token = shape.file_matmul_bytes.value_or(needs.weight_bytes);
    needs.kv_bytes_per_token = plan::kv_bytes_per_token(shape, DType::kF16);
    needs.context_length = shape.context_length;
    return needs;
}

// Loads the model and generates 8 greedy tokens: the whole path a request takes, once.
nlohmann::json smoke_generation(const std::string& path, ThreadPool& pool) {
    auto model = Model::load(path);
    if (!model.is_ok()) return {{"ok", false}, {"error", model.status().message()}};
    auto tokenizer = Tokenizer::from_gguf(model.value()->file());
    if (!tokenizer.is_ok()) return {{"ok", false}, {"error", tokenizer.status().message()}};
    GenerationOptions options;
    options.max_new_tokens = 8;
    const std::vector<int32_t> prompt = tokenizer.value()->encode("Hello", true, false);
    auto result = generate(*model.value(), pool, prompt, options);
    if (!result.is_ok()) return {{"ok", false}, {"error", result.status().message()}};
    const double seconds = result.value().decode_ms / 1000.0;
    const auto decoded = static_cast<double>(result.value().tokens.size()) - 1;
    return {{"ok", true}, {"tokens", result.value().tokens.size()},
            {"decode_tokens_per_s", seconds > 0 && decoded > 0 ? decoded / seconds : 0.0}};
}

nlohmann::json machine_json(const doctor::MachineFacts& facts) {
    nlohmann::json memory = {{"host_available_bytes", facts.memory.host_available},
                             {"available_bytes", facts.memory.bytes()}};
    if (facts.memory.cgroup_headroom) {
        memory["cgroup_headroom_bytes"] = *facts.memory.cgroup_headroom;
        memory["cgroup_limit_file"] = facts.memory.cgroup_limited_by;
    }
    return {{"cpu", facts.cpu_model}, {"usable_cores", facts.usable_cores}, {"kernels", facts.kernels},
            {"memory", memory}, {"transparent_hugepage", facts.transparent_hugepage},
            {"load_average", facts.load_average}};
}

void print_text(const nlohmann::json& report) {
    const nlohmann::json& machine = report["machine"];
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    std::cout << fmt::format("cpu: {} ({} usable cores), kernels: {}\n", machine["cpu"].get<std::string>(),
                             machine["usable_cores"].get<int>(), machine["kernels"].get<std::string>());
    std::cout << fmt::format("memory: {:.2f} GiB available{}; transparent huge pages: {}; load average {:.2f}\n",
                             machine["memory"]["available_bytes"].get<double>() / kGiB,
                             machine["memory"].contains("cgroup_limit_file") ? " (cgroup limit)" : "",
                             machine["transparent_hugepage"].get<std::string>(),
                             machine["load_average"].get<double>());
    std::cout << fmt::format("measured now: read bandwidth {:.1f} GB/s, int8 peak {:.0f} GOP/s\n",
                             report["read_gb_per_s"].get<double>(), report.value("int8_gops", 0.0));
    if (report.contains("model")) {
        const nlohmann::json& model = report["model"];
        std::cout << fmt::format("model: {}: {:.0f} MB read per decoded token -> decode at most {:.1f} tokens/s; "
                                 "{} full contexts of {} tokens in the default KV budget ({} at most)\n",
                                 model["path"].get<std::string>(), model["decode_bytes_per_token"].get<double>() / 1e6,
                                 model["predicted_decode_tokens_per_s"].get<double>(),
                                 model["contexts_at_default_budget"].get<int64_t>(),
                                 model["context_length"].get<int64_t>(), model["contexts_at_most"].get<int64_t>());
        std::cout << "smoke generation: " << model["smoke"].dump() << "\n";
    }
    for (const nlohmann::json& warning : report["warnings"]) {
        std::cout << "warning: " << warning["problem"].get<std::string>() << "\n  fix: "
                  << warning["fix"].get<std::string>() << "\n";
    }
    if (report["warnings"].empty()) std::cout << "no warnings\n";
}

Status run_doctor(const DoctorOptions& options) {
    const doctor::MachineFacts facts = doctor::read_machine_facts();
    ThreadPool pool(options.num_threads);
    const doctor::MeasuredCeilings ceilings = doctor::measure_ceilings(pool);
    nlohmann::json report = {{"machine", machine_json(facts)}, {"threads", options.num_threads},
                             {"read_gb_per_s", ceilings.read_bytes_per_s / 1e9}};
    if (ceilings.int8_ops_per_s > 0) report["int8_gops"] = ceilings.int8_ops_per_s / 1e9;
    std::optional<doctor::ModelNeeds> needs;
    std::optional<doctor::ModelOutlook> expected;
    if (!options.model_path.empty()) {
        TERN_ASSIGN_OR_RETURN(needs, model_needs(options.model_path));
        expected = doctor::outlook(*needs, ceilings.read_bytes_per_s, facts.memory.bytes());
        report["model"] = {{"path", needs->path}, {"weight_bytes", needs->weight_bytes},
                           {"decode_bytes_per_token", needs->decode_bytes_per_token},
                           {"kv_bytes_per_token", needs->kv_bytes_per_token},
                           {"context_length", needs->context_length},
                           {"predicted_decode_tokens_per_s", expected->decode_tokens_per_s},
                           {"contexts_at_default_budget", expected->contexts_at_default_budget},
                           {"contexts_at_most", expected->contexts_at_most},
                           {"smoke", smoke_generation(options.model_path, pool)}};
    }
    report["warnings"] = nlohmann::json::array();
    for (const doctor::Warning& warning : doctor::warnings_for(facts, needs, expected)) {
        report["warnings"].push_back({{"problem", warning.problem}, {"fix", warning.fix}});
    }
    if (options.json) {
        std::cout << report.dump(2) << "\n";
    } else {
        print_text(report);
    }
    return Status::ok();
}

}  // namespace

void register_doctor(CLI::App& app) {
    auto options = std::make_shared<DoctorOptions>();
    CLI::App* command = app.add_subcommand(
        "doctor", "Check this machine for serving: CPU, kernels, memory, huge pages, load; bandwidth and int8 peak "
                  "measured now (seconds); with -m, the model's expected decode speed, contexts that fit and a smoke "
                  "generation");
    add_model_option(command, &options->model_path, "GGUF model file to predict for and smoke-test");
    add_threads_option(command, &options->num_threads);
    command->add_flag("--json", options->json, "Print one JSON object");
    set_action(command, [options] { return run_doctor(*options); });
}

}  // namespace tern::apps

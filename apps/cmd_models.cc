// `tern models`: the model store (pull, list, verify, rm, use, rollback, path). Library: src/store.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "apps/commands.h"
#include "base/sha256.h"
#include "store/model_store.h"
#include "store/download.h"
#include "store/pull.h"
#include "store/resolve.h"

namespace tern::apps {
namespace {

struct ModelsOptions {
    std::string root;
    std::string source;
    std::string ref;  // name or name@version
    std::string version;
    std::string sha256;
    bool make_current = false;
    bool json = false;
};

std::string human_size(uint64_t bytes) {
    if (bytes >= (uint64_t{1} << 30)) return fmt::format("{:.2f} GiB", bytes / double(uint64_t{1} << 30));
    if (bytes >= (uint64_t{1} << 20)) return fmt::format("{:.1f} MiB", bytes / double(uint64_t{1} << 20));
    return fmt::format("{:.1f} KiB", bytes / 1024.0);
}

// On a terminal one line redrawn in place; otherwise a line at each tenth, so logs stay short.
std::function<void(uint64_t, uint64_t)> progress_printer() {
    const bool terminal = ::isatty(STDERR_FILENO) != 0;
    auto last_tenth = std::make_shared<int>(-1);
    auto last_draw = std::make_shared<std::chrono::steady_clock::time_point>();
    return [terminal, last_tenth, last_draw](uint64_t have, uint64_t total) {
        const auto now = std::chrono::steady_clock::now();
        const int tenth = total != 0 ? static_cast<int>(have * 10 / total) : -1;
        if (terminal && now - *last_draw > std::chrono::milliseconds(250)) {
            *last_draw = now;
            std::fprintf(stderr, "\rpulled %s of %s   ", human_size(have).c_str(),
                         total != 0 ? human_size(total).c_str() : "?");
        } else if (!terminal && total != 0 && tenth > *last_tenth) {
            *last_tenth = tenth;
            std::fprintf(stderr, "pulled %s of %s (%d%%)\n", human_size(have).c_str(), human_size(total).c_str(),
                         tenth * 10);
        }
    };
}

Status run_pull(const ModelsOptions& options) {
    store::ModelStore model_store(store::store_root(options.root));
    store::PullRequest request{.source = options.source, .name = options.ref, .version = options.version};
    if (!options.sha256.empty()) {
        request.expected = parse_sha256_hex(options.sha256);
        if (!request.expected) return invalid_argument("--sha256 takes 64 hex digits (as sha256sum prints them)");
    }
    request.make_current = options.make_current;
    request.on_progress = progress_printer();
    request.on_note = [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
    TERN_ASSIGN_OR_RETURN(const store::PullOutcome outcome, store::pull(model_store, request));
    if (::isatty(STDERR_FILENO) != 0) std::fprintf(stderr, "\n");
    const std::string ref = options.ref + "@" + outcome.install.version;
    if (outcome.install.already_installed) {
        std::cout << fmt::format("{} already holds this file (SHA-256 {}); nothing changed\n", ref, outcome.sha256);
        return Status::ok();
    }
    std::cout << fmt::format("installed {} ({}, SHA-256 {}, checksum {}{}){}\n", ref, human_size(outcome.bytes),
                             outcome.sha256, outcome.checksum_from,
                             outcome.resumed_from != 0 ? fmt::format(", resumed at {} bytes", outcome.resumed_from)
                                                       : "",
                             outcome.install.became_current ? "; now current" : "");
    if (outcome.checksum_from == "computed") {
        std::cerr << "note: no --sha256 was given" << (store::is_url(options.source) ? " and the server publishes none (URL.sha256)" : "")
                  << ": the file's own SHA-256 is recorded for `tern models verify`\n";
    }
    if (!outcome.install.became_current) {
        std::cout << fmt::format("current stays as it was: `tern models use {}` switches to it\n", ref);
    }
    return Status::ok();
}

nlohmann::json to_json(const store::StoredModel& model) {
    nlohmann::json versions = nlohmann::json::array();
    for (const store::StoredVersion& stored : model.versions) {
        versions.push_back({{"version", stored.version}, {"path", stored.path}, {"size", stored.size},
                            {"sha256", stored.sha256}, {"checksum_from", stored.checksum_from},
                            {"source", stored.source}, {"installed_at", stored.installed_at},
                            {"architecture", stored.architecture}, {"weight_type", stored.weight_type},
                            {"current", stored.version == model.current}});
    }
    return {{"name", model.name}, {"current", model.current}, {"versions", versions}, {"history", model.history}};
}

Status run_list(const ModelsOptions& options) {
    store::ModelStore model_store(store::store_root(options.root));
    TERN_ASSIGN_OR_RETURN(const std::vector<store::StoredModel> models, model_store.list());
    if (options.json) {
        nlohmann::json all = nlohmann::json::array();
        for (const store::StoredModel& model : models) all.push_back(to_json(model));
        std::cout << nlohmann::json{{"root", model_store.root()}, {"models", all}}.dump(1) << "\n";
        return Status::ok();
    }
    if (models.empty()) {
        std::cout << fmt::format("the store at {} is empty: `tern models pull URL|FILE --name NAME` adds a model\n",
                                 model_store.root());
        return Status::ok();
    }
    std::cout << fmt::format("{:<24} {:<10} {:>11} {:<6} {:<10} {:<8} {}\n", "NAME", "VERSION", "SIZE", "TYPE",
                             "ARCH", "CURRENT", "SHA256");
    for (const store::StoredModel& model : models) {
        for (const store::StoredVersion& stored : model.versions) {
            std::cout << fmt::format("{:<24} {:<10} {:>11} {:<6} {:<10} {:<8} {}\n", model.name, stored.version,
                                     human_size(stored.size), stored.weight_type, stored.architecture,
                                     stored.version == model.current ? "*" : "", stored.sha256.substr(0, 16));
        }
    }
    return Status::ok();
}

// Hashes every version that `ref` covers (all of them when empty) against its manifest.
Status run_verify(const ModelsOptions& options) {
    store::ModelStore model_store(store::store_root(options.root));
    std::vector<store::StoredModel> models;
    std::string version;
    if (options.ref.empty()) {
        TERN_ASSIGN_OR_RETURN(models, model_store.list());
    } else {
        TERN_ASSIGN_OR_RETURN(const store::ModelRef ref, store::parse_model_ref(options.ref));
        TERN_ASSIGN_OR_RETURN(store::StoredModel model, model_store.find(ref.name));
        models.push_back(std::move(model));
        version = ref.version;
    }
    int checked = 0, bad = 0;
    for (const store::StoredModel& model : models) {
        for (const store::StoredVersion& stored : model.versions) {
            if (!version.empty() && stored.version != version) continue;
            ++checked;
            Result<Sha256> actual = sha256_of_file(stored.path);
            const std::string found = actual.is_ok() ? to_hex(actual.value()) : actual.status().message();
            const bool ok = actual.is_ok() && found == stored.sha256;
            bad += ok ? 0 : 1;
            std::cout << fmt::format("{}@{} {}\n", model.name, stored.version,
                                     ok ? "ok" : fmt::format("CORRUPT: SHA-256 {}, the manifest says {}", found,
                                                             stored.sha256));
        }
    }
    if (checked == 0) return not_found(fmt::format("nothing to verify for '{}'", options.ref));
    if (bad != 0) {
        return invalid_argument(fmt::format("{} of {} stored files do not match their manifests: `tern models rm "
                                            "NAME@VERSION` and pull them again",
                                            bad, checked));
    }
    return Status::ok();
}

Status run_use(const ModelsOptions& options) {
    store::ModelStore model_store(store::store_root(options.root));
    TERN_ASSIGN_OR_RETURN(const store::ModelRef ref, store::parse_model_ref(options.ref));
    TERN_RETURN_IF_ERROR(model_store.use(ref));
    std::cout << fmt::format("{} is current\n", ref.to_string());
    return Status::ok();
}

Status run_rollback(const ModelsOptions& options) {
    store::ModelStore model_store(store::store_root(options.root));
    TERN_ASSIGN_OR_RETURN(const std::string version, model_store.rollback(options.ref));
    std::cout << fmt::format("{}@{} is current\n", options.ref, version);
    return Status::ok();
}

Status run_rm(const ModelsOptions& options) {
    store::ModelStore model_store(store::store_root(options.root));
    TERN_ASSIGN_OR_RETURN(const store::ModelRef ref, store::parse_model_ref(options.ref));
    TERN_RETURN_IF_ERROR(model_store.remove(ref));
    std::cout << fmt::format("removed {}\n", ref.version.empty() ? ref.name + " (every version)" : ref.to_string());
    return Status::ok();
}

Status run_path(const ModelsOptions& options) {
    TERN_ASSIGN_OR_RETURN(const store::ModelRef ref, store::parse_model_ref(options.ref));
    TERN_ASSIGN_OR_RETURN(const std::string path, store::ModelStore(store::store_root(options.root)).resolve(ref));
    std::cout << path << "\n";
    return Status::ok();
}

CLI::App* add_store_command(CLI::App* models, const std::shared_ptr<ModelsOptions>& options, const std::string& name,
                            const std::string& help, Status (*action)(const ModelsOptions&)) {
    CLI::App* command = models->add_subcommand(name, help);
    command->add_option("--root", options->root,
                        "The store's folder (default: $TERN_HOME, else $XDG_DATA_HOME/tern, else ~/.local/share/tern)");
    set_action(command, [options, action] { return action(*options); });
    return command;
}

}  // namespace

void register_models(CLI::App& app) {
    auto options = std::make_shared<ModelsOptions>();
    CLI::App* models = app.add_subcommand("models", "The model store: pull, list, verify, rm, use, rollback, path");
    models->require_subcommand(1);
    CLI::App* pull = add_store_command(models, options, "pull",
                                       "Download a GGUF (http/https, resumable) or copy a file into NAME/VERSION",
                                       &run_pull);
    pull->add_option("source", options->source, "URL or file")->required();
    pull->add_option("--name", options->ref, "The model's name in the store")->required();
    pull->add_option("--version", options->version, "Version (default: the next vN)");
    pull->add_option("--sha256", options->sha256, "Expected SHA-256 (default: URL.sha256 when the server has it)");
    pull->add_flag("--use", options->make_current, "Make it current (a name's first version always becomes current)");
    CLI::App* list = add_store_command(models, options, "list", "Names, versions, sizes, types; * marks current",
                                       &run_list);
    list->add_flag("--json", options->json, "Print one JSON object");
    add_store_command(models, options, "verify", "Hash stored files against their manifests", &run_verify)
        ->add_option("model", options->ref, "NAME or NAME@VERSION (default: everything)");
    add_store_command(models, options, "use", "Make NAME@VERSION current (what `-m NAME` loads)", &run_use)
        ->add_option("model", options->ref, "NAME@VERSION")->required();
    add_store_command(models, options, "rollback", "Make the version that was current before current again",
                      &run_rollback)
        ->add_option("name", options->ref, "NAME")->required();
    add_store_command(models, options, "rm", "Remove NAME@VERSION, or every version of NAME", &run_rm)
        ->add_option("model", options->ref, "NAME or NAME@VERSION")->required();
    add_store_command(models, options, "path", "Print the file that `-m NAME[@VERSION]` loads", &run_path)
        ->add_option("model", options->ref, "NAME or NAME@VERSION")->required();
}

CLI::Validator model_resolver(std::string* typed) {
    return CLI::Validator(
        [typed](std::string& value) -> std::string {
            if (typed != nullptr) *typed = value;
            Result<store::ResolvedModel> resolved = store::resolve_model_argument(value, store::store_root());
            if (!resolved.is_ok()) return resolved.status().message();
            value = resolved.value().path;
            return "";
        },
        "", "");
}

CLI::Option* add_model_option(CLI::App* command, std::string* path, const std::string& help, std::string* typed) {
    return command->add_option("-m,--model", *path, help + kModelOptionNote)->transform(model_resolver(typed));
}

}  // namespace tern::apps

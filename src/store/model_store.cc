#include "store/model_store.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include <fmt/chrono.h>
#include <fmt/format.h>

#include "formats/gguf.h"
#include "store/file_lock.h"
#include "store/manifest.h"

namespace tern::store {
namespace fs = std::filesystem;
namespace {

std::string read_current(const std::string& model_dir) {
    std::error_code error;
    const fs::path target = fs::read_symlink(model_dir + "/current", error);
    return error ? std::string() : target.filename().string();
}

std::vector<std::string> read_history(const std::string& model_dir) {
    std::vector<std::string> history;
    std::ifstream in(model_dir + "/history");
    for (std::string line; std::getline(in, line);) {
        if (!line.empty()) history.push_back(line);
    }
    return history;
}

// A name unique to this process and call, for staging and trash folders.
std::string unique_suffix() {
    static std::atomic<int> counter{0};
    return fmt::format("{}-{}", ::getpid(), counter++);
}

// Renames `path` out of sight first, so that no reader finds it half deleted.
Status remove_atomically(const std::string& path, const std::string& trash_dir) {
    const std::string trash = fmt::format("{}/.trash-{}", trash_dir, unique_suffix());
    if (::rename(path.c_str(), trash.c_str()) != 0) {
        return internal_error(fmt::format("cannot remove {}: {}", path, std::strerror(errno)));
    }
    std::error_code error;
    fs::remove_all(trash, error);  // a leftover is invisible to the store and removed by the next remove
    return sync_dir(trash_dir);
}

Result<FileLock> lock_name(const std::string& root, const std::string& name) {
    std::error_code error;
    fs::create_directories(root + "/.locks", error);
    if (error) return internal_error(fmt::format("cannot create {}/.locks: {}", root, error.message()));
    return FileLock::acquire(fmt::format("{}/.locks/{}.lock", root, name));
}

std::string utc_now() {
    return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(
                                                    std::chrono::system_clock::now())));
}

std::string next_version(const StoredModel& model) {
    int highest = 0;
    for (const StoredVersion& stored : model.versions) {
        if (stored.version.size() > 1 && stored.version[0] == 'v' &&
            std::all_of(stored.version.begin() + 1, stored.version.end(), ::isdigit)) {
            highest = std::max(highest, std::atoi(stored.version.c_str() + 1));
        }
    }
    return fmt::format("v{}", highest + 1);
}

const StoredVersion* find_version(const StoredModel& model, const std::string& version) {
    for (const StoredVersion& stored : model.versions) {
        if (stored.version == version) return &stored;
    }
    return nullptr;
}

std::string version_list(const StoredModel& model) {
    std::string text;
    for (const StoredVersion& stored : model.versions) text += (text.empty() ? "" : ", ") + stored.version;
    return text.empty() ? "none" : text;
}

// The version, or an error that lists the ones the model has.
Result<const StoredVersion*> require_version(const StoredModel& model, const std::string& version) {
    if (const StoredVersion* stored = find_version(model, version)) return stored;
    return not_found(fmt::format("model '{}' has no version '{}' (versions: {})", model.name, version,
                                 version_list(model)));
}

// Moves `file` and its manifest into a staging folder of `dir`, then renames that folder to the version's name: the
// version appears whole or not at all.
Status place_version(const std::string& file, const StoredVersion& facts, const std::string& dir) {
    const std::string staging = fmt::format("{}/.staging-{}", dir, unique_suffix());
    std::error_code error;
    fs::create_directories(staging, error);
    if (error) return internal_error(fmt::format("cannot create {}: {}", staging, error.message()));
    Status status = ::rename(file.c_str(), (staging + "/" + kModelFileName).c_str()) == 0
                        ? write_manifest(staging, facts)
                        : internal_error(fmt::format("cannot move {} into the store: {}", file, std::strerror(errno)));
    if (status.is_ok() && ::rename(staging.c_str(), (dir + "/" + facts.version).c_str()) != 0) {
        status = internal_error(fmt::format("cannot install {}/{}: {}", dir, facts.version, std::strerror(errno)));
    }
    if (!status.is_ok()) {
        fs::remove_all(staging, error);
        return status;
    }
    return sync_dir(dir);
}

}  // namespace

Result<StoredModel> ModelStore::find(const std::string& name) const {
    TERN_RETURN_IF_ERROR(check_store_word(name, "name"));
    const std::string dir = model_dir(name);
    std::error_code error;
    if (!fs::is_directory(dir, error)) {
        return not_found(fmt::format("no model '{}' in the store at {} (`tern models list` shows what it holds)", name,
                                     root_));
    }
    StoredModel model{name, read_current(dir), {}, read_history(dir)};
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, error)) {
        const std::string version = entry.path().filename().string();
        if (!entry.is_directory() || entry.is_symlink() || version.front() == '.') continue;
        Result<StoredVersion> facts = read_manifest(entry.path().string());
        if (facts.is_ok()) model.versions.push_back(std::move(facts).value());
    }
    std::sort(model.versions.begin(), model.versions.end(), [](const StoredVersion& a, const StoredVersion& b) {
        return std::tie(a.installed_at, a.version) < std::tie(b.installed_at, b.version);
    });
    if (model.versions.empty()) return not_found(fmt::format("model '{}' in {} has no versions", name, root_));
    return model;
}

Result<std::vector<StoredModel>> ModelStore::list() const {
    std::vector<StoredModel> models;
    std::error_code error;
    if (!fs::is_directory(root_, error)) return models;
    std::vector<std::string> names;
    for (const fs::directory_entry& entry : fs::directory_iterator(root_, error)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_directory() && check_store_word(name, "name").is_ok()) names.push_back(name);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        Result<StoredModel> model = find(name);
        if (model.is_ok()) models.push_back(std::move(model).value());
    }
    return models;
}

Result<std::string> ModelStore::resolve(const ModelRef& ref) const {
    TERN_ASSIGN_OR_RETURN(StoredModel model, find(ref.name));
    const std::string version = ref.version.empty() ? model.current : ref.version;
    if (version.empty()) {
        return not_found(fmt::format("model '{}' has no current version: choose one with `tern models use {}@VERSION` "
                                     "(versions: {})",
                                     ref.name, ref.name, version_list(model)));
    }
    TERN_ASSIGN_OR_RETURN(const StoredVersion* stored, require_version(model, version));
    return stored->path;
}

Result<InstallOutcome> ModelStore::install(const InstallRequest& request) {
    TERN_RETURN_IF_ERROR(check_store_word(request.name, "name"));
    if (!request.facts.version.empty()) TERN_RETURN_IF_ERROR(check_store_word(request.facts.version, "version"));
    TERN_ASSIGN_OR_RETURN(FileLock lock, lock_name(root_, request.name));
    InstallOutcome outcome;
    TERN_RETURN_IF_ERROR(install_locked(request, outcome));
    return outcome;
}

Status ModelStore::install_locked(const InstallRequest& request, InstallOutcome& outcome) {
    Result<StoredModel> found = find(request.name);
    const StoredModel model = found.is_ok() ? std::move(found).value() : StoredModel{request.name, "", {}, {}};
    for (const StoredVersion& stored : model.versions) {
        if (stored.sha256 == request.facts.sha256) {
            outcome = InstallOutcome{stored.version, /*already_installed=*/true, false};
            return Status::ok();
        }
    }
    StoredVersion facts = request.facts;
    if (facts.version.empty()) facts.version = next_version(model);
    if (const StoredVersion* taken = find_version(model, facts.version)) {
        return invalid_argument(fmt::format("{}@{} exists with another file (SHA-256 {}): choose another --version, "
                                            "or `tern models rm {}@{}` first",
                                            request.name, facts.version, taken->sha256, request.name, facts.version));
    }
    facts.installed_at = utc_now();
    const std::string dir = model_dir(request.name);
    TERN_RETURN_IF_ERROR(place_version(request.file, facts, dir));
    outcome = InstallOutcome{facts.version, false, model.current.empty() || request.make_current};
    if (!outcome.became_current) return Status::ok();
    if (!model.current.empty()) {
        std::vector<std::string> history = model.history;
        history.push_back(model.current);
        TERN_RETURN_IF_ERROR(write_history(request.name, history));
    }
    return switch_current(request.name, facts.version);
}

Status ModelStore::use(const ModelRef& ref) {
    if (ref.version.empty()) {
        return invalid_argument(fmt::format("say which version: `tern models use {}@VERSION`", ref.name));
    }
    TERN_ASSIGN_OR_RETURN(FileLock lock, lock_name(root_, ref.name));
    TERN_ASSIGN_OR_RETURN(StoredModel model, find(ref.name));
    TERN_RETURN_IF_ERROR(require_version(model, ref.version).status());
    if (model.current == ref.version) return Status::ok();
    if (!model.current.empty()) {
        model.history.push_back(model.current);
        TERN_RETURN_IF_ERROR(write_history(ref.name, model.history));
    }
    return switch_current(ref.name, ref.version);
}

Result<std::string> ModelStore::rollback(const std::string& name) {
    TERN_ASSIGN_OR_RETURN(FileLock lock, lock_name(root_, name));
    TERN_ASSIGN_OR_RETURN(StoredModel model, find(name));
    std::vector<std::string> history = model.history;
    // Versions removed since they were current are skipped.
    while (!history.empty() &&
           (find_version(model, history.back()) == nullptr || history.back() == model.current)) {
        history.pop_back();
    }
    if (history.empty()) {
        return not_found(fmt::format("'{}' has no earlier version to roll back to (current: {}; versions: {})", name,
                                     model.current.empty() ? "none" : model.current, version_list(model)));
    }
    const std::string previous = history.back();
    history.pop_back();
    TERN_RETURN_IF_ERROR(write_history(name, history));
    TERN_RETURN_IF_ERROR(switch_current(name, previous));
    return previous;
}

Status ModelStore::remove(const ModelRef& ref) {
    TERN_ASSIGN_OR_RETURN(FileLock lock, lock_name(root_, ref.name));
    TERN_ASSIGN_OR_RETURN(StoredModel model, find(ref.name));
    if (ref.version.empty()) return remove_atomically(model_dir(ref.name), root_);
    TERN_RETURN_IF_ERROR(require_version(model, ref.version).status());
    if (model.current == ref.version && model.versions.size() > 1) {
        return invalid_argument(fmt::format("{}@{} is current: switch first (`tern models use` or `rollback`), or "
                                            "remove every version with `tern models rm {}`",
                                            ref.name, ref.version, ref.name));
    }
    if (model.versions.size() == 1) return remove_atomically(model_dir(ref.name), root_);
    std::erase(model.history, ref.version);
    TERN_RETURN_IF_ERROR(write_history(ref.name, model.history));
    return remove_atomically(model_dir(ref.name) + "/" + ref.version, model_dir(ref.name));
}

Status ModelStore::switch_current(const std::string& name, const std::string& version) {
    const std::string dir = model_dir(name);
    const std::string temp = fmt::format("{}/.current-{}", dir, unique_suffix());
    if (::symlink(version.c_str(), temp.c_str()) != 0 || ::rename(temp.c_str(), (dir + "/current").c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        ::unlink(temp.c_str());
        return internal_error(fmt::format("cannot make {}@{} current: {}", name, version, reason));
    }
    return sync_dir(dir);
}

Status ModelStore::write_history(const std::string& name, const std::vector<std::string>& history) {
    std::string text;
    for (const std::string& version : history) text += version + "\n";
    return write_file_atomically(model_dir(name) + "/history", text);
}

Status describe_model_file(const std::string& path, StoredVersion& facts) {
    Result<std::unique_ptr<GgufFile>> file = GgufFile::open(path);
    if (!file.is_ok()) return invalid_argument("not a GGUF model: " + file.status().message());
    facts.architecture = file.value()->get_string("general.architecture").value_or("");
    std::map<DType, int64_t> bytes_by_type;
    for (const GgufTensorInfo& tensor : file.value()->tensors()) {
        if (tensor.dims.size() >= 2) bytes_by_type[tensor.type] += tensor.num_bytes;
    }
    const auto most = std::max_element(bytes_by_type.begin(), bytes_by_type.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; });
    facts.weight_type = most == bytes_by_type.end() ? "" : std::string(dtype_name(most->first));
    return Status::ok();
}

}  // namespace tern::store

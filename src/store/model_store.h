// The model store: `{root}/{name}/{version}/model.gguf` with a manifest.json beside it (SHA-256, size, source,
// architecture, weight type), a `current` symbolic link per name naming the version that `-m name` loads, and a
// `history` of the versions that were current before, for rollback. Every change is atomic for a reader: a version
// appears by renaming a complete staging folder into place, `current` is switched by renaming a new link over it,
// and a removed version is renamed away before it is deleted. Writers of one name take turns on a lock file
// (`{root}/.locks/{name}.lock`), so concurrent `tern models` processes never interleave their changes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/sha256.h"
#include "base/status.h"
#include "store/model_ref.h"

namespace tern::store {

struct StoredVersion {
    std::string version;
    std::string path;          // the model file
    uint64_t size = 0;
    std::string sha256;        // hex
    std::string checksum_from; // "given", "published" (URL.sha256), "etag" or "computed" (nothing to check against)
    std::string source;        // the URL or file it was pulled from
    std::string installed_at;  // UTC, ISO 8601
    std::string architecture;  // general.architecture
    std::string weight_type;   // the tensor type holding most of the weights' bytes ("Q4_K", "F32")
};

struct StoredModel {
    std::string name;
    std::string current;                  // "" when no version is current
    std::vector<StoredVersion> versions;  // oldest first
    std::vector<std::string> history;     // earlier current versions, latest last
};

// A complete, checked file to install (InstallRequest::file is renamed into the store, so it must be on the
// store's file system: pulls stage it under {root}/.downloads).
struct InstallRequest {
    std::string name;
    std::string file;
    StoredVersion facts;         // version ("" = the next vN), sha256, checksum_from, source, architecture, type
    bool make_current = false;   // otherwise only a name's first version becomes current
};

struct InstallOutcome {
    std::string version;
    bool already_installed = false;  // a version with the same SHA-256 was there; nothing changed
    bool became_current = false;
};

class ModelStore {
public:
    explicit ModelStore(std::string root) : root_(std::move(root)) {}
    const std::string& root() const { return root_; }
    std::string downloads_dir() const { return root_ + "/.downloads"; }

    Result<std::vector<StoredModel>> list() const;
    Result<StoredModel> find(const std::string& name) const;
    // The file `ref` names (the current version when it names none).
    Result<std::string> resolve(const ModelRef& ref) const;

    Result<InstallOutcome> install(const InstallRequest& request);
    Status use(const ModelRef& ref);                         // ref.version required
    Result<std::string> rollback(const std::string& name);  // the version now current
    Status remove(const ModelRef& ref);                      // every version when ref.version is ""

private:
    std::string model_dir(const std::string& name) const { return root_ + "/" + name; }
    Status switch_current(const std::string& name, const std::string& version);
    Status write_history(const std::string& name, const std::vector<std::string>& history);
    Status install_locked(const InstallRequest& request, InstallOutcome& outcome);

    std::string root_;
};

// Reads a GGUF's architecture and main weight type for the manifest; an error when the file is not a GGUF model.
Status describe_model_file(const std::string& path, StoredVersion& facts);

}  // namespace tern::store

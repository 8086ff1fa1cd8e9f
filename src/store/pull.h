// `tern models pull`: a URL (http, https) or a local file into the store. The bytes go to
// {root}/.downloads/{key}.partial (key: the source's hash, so the same pull run again resumes it), are checked
// against the SHA-256 given, else the one published beside the URL (URL.sha256, as sha256sum writes it), else an
// ETag that is a SHA-256 (Hugging Face's LFS files), must open as a GGUF, and only then are renamed into
// {root}/{name}/{version}/. Two pulls of one source take turns on the download's lock; a mismatch or a file that is
// not a GGUF removes the download, so nothing half-installed or wrong remains.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "base/sha256.h"
#include "base/status.h"
#include "store/model_store.h"

namespace tern::store {

struct PullRequest {
    std::string source;              // URL or path
    std::string name;
    std::string version;             // "" = the next vN
    std::optional<Sha256> expected;  // --sha256
    bool make_current = false;       // --use: also make it current when the name has one
    std::function<void(uint64_t have, uint64_t total)> on_progress;
    std::function<void(const std::string& line)> on_note;  // progress notes (waiting, resuming, checksum source)
    const std::atomic<bool>* cancel = nullptr;
};

struct PullOutcome {
    InstallOutcome install;
    std::string sha256;
    std::string checksum_from;  // as StoredVersion::checksum_from
    uint64_t bytes = 0;
    uint64_t resumed_from = 0;
};

Result<PullOutcome> pull(ModelStore& store, const PullRequest& request);

}  // namespace tern::store

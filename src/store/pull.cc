#include "store/pull.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>

#include "store/download.h"
#include "store/file_lock.h"
#include "store/manifest.h"

namespace tern::store {
namespace fs = std::filesystem;
namespace {

struct Staged {
    uint64_t bytes = 0;
    uint64_t resumed_from = 0;
    std::string etag;
};

// Copies a local file (a GGUF on another disk, a mounted share) into the download folder.
Result<Staged> copy_file(const std::string& source, const std::string& partial) {
    std::error_code error;
    if (!fs::is_regular_file(source, error)) {
        return not_found(fmt::format("{} is neither a file nor an http(s) URL", source));
    }
    fs::copy_file(source, partial, fs::copy_options::overwrite_existing, error);
    if (error) {
        fs::remove(partial, error);
        return internal_error(fmt::format("cannot copy {} into the store: {}", source, error.message()));
    }
    return Staged{fs::file_size(partial, error), 0, ""};
}

Result<Staged> download(const PullRequest& request, const std::string& partial) {
    DownloadOptions options;
    options.url = request.source;
    options.partial_path = partial;
    options.on_progress = request.on_progress;
    options.cancel = request.cancel;
    TERN_ASSIGN_OR_RETURN(DownloadOutcome outcome, download_to_file(options));
    if (outcome.restarted && request.on_note) request.on_note("the server ignored the range request: downloaded anew");
    return Staged{outcome.bytes, outcome.resumed_from, outcome.etag};
}

// The checksum to hold the file to, and where it came from.
struct Expected {
    std::optional<Sha256> hash;
    std::string from = "computed";
};

Result<Expected> published_checksum(const PullRequest& request) {
    if (request.expected) return Expected{request.expected, "given"};
    if (!is_url(request.source)) return Expected{};
    const std::string url = request.source + ".sha256";
    Result<std::string> text = fetch_text(url, 4096, std::chrono::seconds(30));
    if (!text.is_ok()) {
        if (text.status().code() == StatusCode::kNotFound) return Expected{};
        return text.status();
    }
    const std::string first_word = text.value().substr(0, text.value().find_first_of(" \t\r\n"));
    const std::optional<Sha256> hash = parse_sha256_hex(first_word);
    if (!hash) return invalid_argument(fmt::format("{} does not start with a SHA-256 (64 hex digits)", url));
    return Expected{hash, "published"};
}

std::string download_key(const std::string& source) {
    std::error_code error;
    const std::string absolute = is_url(source) ? source : fs::absolute(source, error).string();
    return to_hex(sha256(absolute)).substr(0, 20);
}

Status check_and_describe(const std::string& partial, const Staged& staged, Expected expected,
                          StoredVersion& facts) {
    TERN_ASSIGN_OR_RETURN(const Sha256 actual, sha256_of_file(partial));
    if (!expected.hash) {
        if (const std::optional<Sha256> etag = parse_sha256_hex(staged.etag)) expected = Expected{etag, "etag"};
    }
    if (expected.hash && *expected.hash != actual) {
        return invalid_argument(fmt::format("checksum mismatch for {}: expected SHA-256 {} ({}), got {}; the "
                                            "download is removed and nothing was installed",
                                            facts.source, to_hex(*expected.hash), expected.from, to_hex(actual)));
    }
    facts.sha256 = to_hex(actual);
    facts.checksum_from = expected.from;
    facts.size = staged.bytes;
    Status described = describe_model_file(partial, facts);
    if (!described.is_ok()) {
        return invalid_argument(fmt::format("{} is {}; nothing was installed", facts.source, described.message()));
    }
    return Status::ok();
}

}  // namespace

Result<PullOutcome> pull(ModelStore& store, const PullRequest& request) {
    TERN_RETURN_IF_ERROR(check_store_word(request.name, "name"));
    if (!request.version.empty()) TERN_RETURN_IF_ERROR(check_store_word(request.version, "version"));
    TERN_ASSIGN_OR_RETURN(const Expected expected, published_checksum(request));
    std::error_code error;
    fs::create_directories(store.downloads_dir(), error);
    if (error) return internal_error(fmt::format("cannot create {}: {}", store.downloads_dir(), error.message()));
    const std::string base = store.downloads_dir() + "/" + download_key(request.source);
    TERN_ASSIGN_OR_RETURN(FileLock lock, FileLock::acquire(base + ".lock", [&] {
                              if (request.on_note) request.on_note("waiting for another pull of " + request.source);
                          }));
    const std::string partial = base + ".partial";
    TERN_ASSIGN_OR_RETURN(const Staged staged,
                          is_url(request.source) ? download(request, partial) : copy_file(request.source, partial));
    StoredVersion facts{.version = request.version, .source = request.source};
    Status checked = check_and_describe(partial, staged, expected, facts);
    if (!checked.is_ok()) {
        remove_partial_download(partial);
        return checked;
    }
    InstallRequest install{request.name, partial, facts, request.make_current};
    TERN_ASSIGN_OR_RETURN(const InstallOutcome installed, store.install(install));
    remove_partial_download(partial);  // the file is still there when the name held it already
    return PullOutcome{installed, facts.sha256, facts.checksum_from, staged.bytes, staged.resumed_from};
}

}  // namespace tern::store

// HTTP(S) downloads into a file with libcurl, resumable: bytes already in the file are kept and the rest asked for
// with a Range request, guarded by If-Range with the validator (ETag or Last-Modified) the first response carried,
// so a file that changed on the server starts over instead of being spliced. A server that ignores Range (200)
// starts over too; one that answers with other bytes than asked for (a Content-Range that does not start where the
// file ends, a total that changed, more bytes than the range) is an error, and the partial file is removed so that
// the next attempt starts clean. Failures come back as Status values that say what to do next.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "base/status.h"

namespace tern::store {

struct DownloadOptions {
    std::string url;
    // Where the bytes go. Bytes already there (from an interrupted attempt, described by `partial_path + ".json"`)
    // are resumed; the description is written once the first response is accepted.
    std::string partial_path;
    std::chrono::seconds connect_timeout{30};
    std::chrono::seconds stall_timeout{60};  // abort when under 1 byte/s for this long
    // Called now and then with the bytes the file holds and the full size (0 while unknown).
    std::function<void(uint64_t have, uint64_t total)> on_progress;
    const std::atomic<bool>* cancel = nullptr;  // set to stop the transfer (the partial file is kept)
};

struct DownloadOutcome {
    uint64_t bytes = 0;         // the complete file's size
    uint64_t resumed_from = 0;  // bytes kept from an earlier attempt (0: downloaded whole)
    bool restarted = false;     // a partial file existed but the server sent the whole file
    std::string etag;           // the ETag the server gave the file, quotes removed ("" when none)
};

Result<DownloadOutcome> download_to_file(const DownloadOptions& options);

// Deletes a partial download and the description of it that resuming reads, so the next attempt starts afresh.
void remove_partial_download(const std::string& partial_path);

// A small body (a published checksum): the text, kNotFound for 404/410, another error for the rest.
Result<std::string> fetch_text(const std::string& url, size_t max_bytes, std::chrono::seconds timeout);

// Whether `source` names an http:// or https:// URL (anything else is a local path).
bool is_url(const std::string& source);

}  // namespace tern::store

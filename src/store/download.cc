#include "store/download.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <optional>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/text.h"

namespace tern::store {
namespace {

// What an earlier attempt learned about the file: resumed only while the server still describes the same file.
struct PartialInfo {
    std::string url;
    std::string validator;  // ETag (strong) or Last-Modified, sent as If-Range
    uint64_t total = 0;     // 0 when the server gave no size
};

std::string info_path(const std::string& partial_path) { return partial_path + ".json"; }

std::optional<PartialInfo> read_partial_info(const std::string& partial_path) {
    std::ifstream in(info_path(partial_path));
    if (!in) return std::nullopt;
    const nlohmann::json json = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
    if (!json.is_object() || !json.contains("url") || !json["url"].is_string()) return std::nullopt;
    return PartialInfo{json["url"].get<std::string>(), json.value("validator", std::string()),
                       json.value("total", uint64_t{0})};
}

void write_partial_info(const std::string& partial_path, const PartialInfo& info) {
    const nlohmann::json json = {{"url", info.url}, {"validator", info.validator}, {"total", info.total}};
    std::ofstream(info_path(partial_path), std::ios::trunc) << json.dump() << "\n";
}

// The headers of the last response (a redirect's or a 100 Continue's are dropped when the next status line comes).
struct ResponseHeaders {
    std::string content_range;
    std::string etag;
    std::string last_modified;
    std::optional<uint64_t> content_length;

    void add_line(std::string_view line) {
        if (line.substr(0, 5) == "HTTP/") {
            *this = ResponseHeaders{};
            return;
        }
        const size_t colon = line.find(':');
        if (colon == std::string_view::npos) return;
        std::string name(line.substr(0, colon));
        for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        const std::string value(trim_space(line.substr(colon + 1)));
        if (name == "content-range") content_range = value;
        if (name == "etag") etag = value;
        if (name == "last-modified") last_modified = value;
        if (name == "content-length") content_length = std::strtoull(value.c_str(), nullptr, 10);
    }
};

// "bytes START-END/TOTAL" (TOTAL may be "*").
struct ContentRange {
    uint64_t start = 0;
    uint64_t end = 0;
    uint64_t total = 0;  // 0 for "*"
};

std::optional<ContentRange> parse_content_range(const std::string& text) {
    unsigned long long start = 0, end = 0;
    char total_text[32] = {};
    if (std::sscanf(text.c_str(), "bytes %llu-%llu/%31s", &start, &end, total_text) != 3 || end < start) {
        return std::nullopt;
    }
    ContentRange range{start, end, 0};
    if (std::strcmp(total_text, "*") != 0) range.total = std::strtoull(total_text, nullptr, 10);
    return range;
}

std::string unquoted(std::string etag) {
    if (etag.substr(0, 2) == "W/") etag = etag.substr(2);
    if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
    return etag;
}

uint64_t file_size(int fd) {
    struct stat st {};
    return ::fstat(fd, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
}

void init_curl_once() {
    static std::once_flag once;
    std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

// One GET of the rest of the file, with the callbacks' state. Callbacks report a problem by setting `error_`
// and returning a value that makes libcurl abort; run() then turns it into the Status.
class Transfer {
public:
    Transfer(const DownloadOptions& options, int fd, uint64_t resume_from, PartialInfo info)
        : options_(options), fd_(fd), resume_from_(resume_from), info_(std::move(info)) {}
    ~Transfer() {
        if (curl_ != nullptr) curl_easy_cleanup(curl_);
        if (request_headers_ != nullptr) curl_slist_free_all(request_headers_);
    }
    Transfer(const Transfer&) = delete;
    Transfer& operator=(const Transfer&) = delete;

    Result<DownloadOutcome> run() {
        curl_ = curl_easy_init();
        if (curl_ == nullptr) return internal_error("libcurl could not start a transfer");
        configure();
        const CURLcode code = curl_easy_perform(curl_);
        return finish(code);
    }

private:
    void configure() {
        curl_easy_setopt(curl_, CURLOPT_URL, options_.url.c_str());
        curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(curl_, CURLOPT_MAXREDIRS, 10L);
        curl_easy_setopt(curl_, CURLOPT_USERAGENT, "tern-models/1");
        curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT, static_cast<long>(options_.connect_timeout.count()));
        curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(curl_, CURLOPT_LOW_SPEED_TIME, static_cast<long>(options_.stall_timeout.count()));
        curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, &Transfer::on_header);
        curl_easy_setopt(curl_, CURLOPT_HEADERDATA, this);
        curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &Transfer::on_body);
        curl_easy_setopt(curl_, CURLOPT_WRITEDATA, this);
        curl_easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, &Transfer::on_progress);
        curl_easy_setopt(curl_, CURLOPT_XFERINFODATA, this);
        if (resume_from_ == 0) return;
        const std::string range = fmt::format("{}-", resume_from_);
        curl_easy_setopt(curl_, CURLOPT_RANGE, range.c_str());  // libcurl copies option strings
        if (!info_.validator.empty()) {
            request_headers_ = curl_slist_append(request_headers_, ("If-Range: " + info_.validator).c_str());
            curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, request_headers_);
        }
    }

    static size_t on_header(char* data, size_t size, size_t count, void* self) {
        static_cast<Transfer*>(self)->headers_.add_line(std::string_view(data, size * count));
        return size * count;
    }

    static size_t on_body(char* data, size_t size, size_t count, void* self_ptr) {
        auto* self = static_cast<Transfer*>(self_ptr);
        const size_t bytes = size * count;
        if (!self->accepted_ && !self->accept_response()) return 0;
        if (self->status_ != 200 && self->status_ != 206) {
            if (self->error_body_.size() < 512) self->error_body_.append(data, std::min<size_t>(bytes, 512));
            return bytes;
        }
        return self->write_bytes(data, bytes) ? bytes : 0;
    }

    static int on_progress(void* self_ptr, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
        auto* self = static_cast<Transfer*>(self_ptr);
        if (self->options_.cancel != nullptr && self->options_.cancel->load()) {
            self->error_ = fmt::format("interrupted with {} bytes of {} kept: run the same pull again to resume",
                                       self->offset_, self->options_.url);
            return 1;
        }
        if (self->options_.on_progress) self->options_.on_progress(self->offset_, self->total_);
        return 0;
    }

    // Called at the first body bytes of the final response: whether its bytes are the ones asked for.
    bool accept_response() {
        accepted_ = true;
        curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status_);
        if (status_ == 206) return accept_range();
        if (status_ != 200) return true;  // an error body: kept for the message, never written to the file
        if (resume_from_ > 0) {
            // The server ignored Range, or If-Range said the file changed: the whole file is coming.
            outcome_.restarted = true;
            resume_from_ = 0;
            if (::ftruncate(fd_, 0) != 0 || ::lseek(fd_, 0, SEEK_SET) != 0) return fail_write();
        }
        total_ = headers_.content_length.value_or(0);
        return remember_file();
    }

    bool accept_range() {
        const std::optional<ContentRange> range = parse_content_range(headers_.content_range);
        if (!range || range->start != resume_from_) {
            return reject(fmt::format("{} answered a request for bytes {}- with \"Content-Range: {}\": it does not serve "
                                      "byte ranges correctly",
                                      options_.url, resume_from_, headers_.content_range));
        }
        if (info_.total != 0 && range->total != 0 && range->total != info_.total) {
            return reject(fmt::format("{} now has {} bytes, not the {} of the interrupted download: the file changed",
                                      options_.url, range->total, info_.total));
        }
        total_ = range->total;
        range_end_ = range->end + 1;
        return remember_file();
    }

    bool reject(std::string reason) {
        error_ = std::move(reason);
        remove_partial_ = true;
        return false;
    }

    bool remember_file() {
        std::string validator = headers_.etag.substr(0, 2) == "W/" ? std::string() : headers_.etag;
        if (validator.empty()) validator = headers_.last_modified;
        info_ = PartialInfo{options_.url, validator, total_};
        write_partial_info(options_.partial_path, info_);
        outcome_.etag = unquoted(headers_.etag);
        offset_ = resume_from_;
        return true;
    }

    bool write_bytes(const char* data, size_t bytes) {
        const uint64_t limit = range_end_ != 0 ? range_end_ : total_;
        if (limit != 0 && offset_ + bytes > limit) {
            return reject(fmt::format("{} sent more bytes than its headers announced ({}): the download is not "
                                      "trustworthy",
                                      options_.url, limit));
        }
        while (bytes > 0) {
            const ssize_t count = ::write(fd_, data, bytes);
            if (count < 0 && errno == EINTR) continue;
            if (count <= 0) return fail_write();
            data += count;
            bytes -= static_cast<size_t>(count);
            offset_ += static_cast<uint64_t>(count);
        }
        return true;
    }

    bool fail_write() {
        const int code = errno;
        error_ = fmt::format("cannot write {} after {} bytes: {}{}", options_.partial_path, offset_,
                             std::strerror(code),
                             code == ENOSPC || code == EFBIG || code == EDQUOT
                                 ? "; free space (or raise the file-size limit) and run the same pull again to resume"
                                 : "");
        return false;
    }

    Result<DownloadOutcome> finish(CURLcode code);

    const DownloadOptions& options_;
    int fd_;
    uint64_t resume_from_;
    PartialInfo info_;
    CURL* curl_ = nullptr;
    curl_slist* request_headers_ = nullptr;
    ResponseHeaders headers_;
    long status_ = 0;
    bool accepted_ = false;
    uint64_t total_ = 0;      // the whole file's size (0: unknown)
    uint64_t range_end_ = 0;  // for a 206, the end (exclusive) of the bytes announced
    uint64_t offset_ = 0;     // bytes the file holds
    std::string error_;
    bool remove_partial_ = false;
    std::string error_body_;
    DownloadOutcome outcome_;
};

Result<DownloadOutcome> Transfer::finish(CURLcode code) {
    if (!error_.empty()) {
        if (remove_partial_) {
            remove_partial_download(options_.partial_path);
            error_ += "; the partial download is removed, so the next pull starts from the beginning";
        }
        return Status(StatusCode::kUnavailable, error_);
    }
    if (code == CURLE_OK && status_ == 416 && resume_from_ > 0) {
        if (info_.total == resume_from_) return DownloadOutcome{resume_from_, resume_from_, false, ""};
        remove_partial_download(options_.partial_path);
        return Status(StatusCode::kUnavailable,
                      fmt::format("{} refused the range {}- (HTTP 416); the partial download is removed, so the next "
                                  "pull starts from the beginning",
                                  options_.url, resume_from_));
    }
    if (code == CURLE_OK && status_ != 200 && status_ != 206) {
        return Status(StatusCode::kUnavailable,
                      fmt::format("GET {}: HTTP {}{}{}", options_.url, status_, error_body_.empty() ? "" : ": ",
                                  trim_space(std::string_view(error_body_).substr(0, 200))));
    }
    const uint64_t have = file_size(fd_);
    if (code != CURLE_OK) {
        return Status(StatusCode::kUnavailable,
                      fmt::format("GET {}: {} ({} of {} bytes kept: run the same pull again to resume)", options_.url,
                                  curl_easy_strerror(code), have, total_ != 0 ? std::to_string(total_) : "?"));
    }
    if (total_ != 0 && have != total_) {
        return Status(StatusCode::kUnavailable,
                      fmt::format("GET {}: the response ended at {} of {} bytes: run the same pull again to resume",
                                  options_.url, have, total_));
    }
    if (::fsync(fd_) != 0) return internal_error(fmt::format("cannot sync {}: {}", options_.partial_path,
                                                             std::strerror(errno)));
    outcome_.bytes = have;
    outcome_.resumed_from = outcome_.restarted ? 0 : resume_from_;
    return outcome_;
}

size_t append_limited(char* data, size_t size, size_t count, void* target) {
    auto* text = static_cast<std::pair<std::string, size_t>*>(target);
    const size_t bytes = size * count;
    if (text->first.size() + bytes > text->second) return 0;
    text->first.append(data, bytes);
    return bytes;
}

}  // namespace

bool is_url(const std::string& source) {
    return source.rfind("http://", 0) == 0 || source.rfind("https://", 0) == 0;
}

void remove_partial_download(const std::string& partial_path) {
    ::unlink(partial_path.c_str());
    ::unlink(info_path(partial_path).c_str());
}

Result<DownloadOutcome> download_to_file(const DownloadOptions& options) {
    init_curl_once();
    const std::optional<PartialInfo> info = read_partial_info(options.partial_path);
    const bool resume = info && info->url == options.url;
    const int fd = ::open(options.partial_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (resume ? 0 : O_TRUNC), 0644);
    if (fd < 0) {
        return internal_error(fmt::format("cannot create {}: {}", options.partial_path, std::strerror(errno)));
    }
    const uint64_t resume_from = resume ? file_size(fd) : 0;
    ::lseek(fd, static_cast<off_t>(resume_from), SEEK_SET);
    Result<DownloadOutcome> outcome = Transfer(options, fd, resume_from, resume ? *info : PartialInfo{}).run();
    ::close(fd);
    return outcome;
}

Result<std::string> fetch_text(const std::string& url, size_t max_bytes, std::chrono::seconds timeout) {
    init_curl_once();
    CURL* curl = curl_easy_init();
    if (curl == nullptr) return internal_error("libcurl could not start a transfer");
    std::pair<std::string, size_t> body{std::string(), max_bytes};
    curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(curl, CURLOPT_TIMEOUT, static_cast<long>(timeout.count()));
    curl_easy_setopt(curl, CURLOPT_USERAGENT, "tern-models/1");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &append_limited);
    curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
    const CURLcode code = curl_easy_perform(curl);
    long status = 0;
    curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(curl);
    if (code != CURLE_OK) return Status(StatusCode::kUnavailable, fmt::format("GET {}: {}", url, curl_easy_strerror(code)));
    if (status == 404 || status == 410) return not_found(fmt::format("GET {}: HTTP {}", url, status));
    if (status != 200) return Status(StatusCode::kUnavailable, fmt::format("GET {}: HTTP {}", url, status));
    return std::move(body.first);
}

}  // namespace tern::store

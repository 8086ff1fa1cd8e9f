#include "serve_process.h"

#include <cctype>

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "run_command.h"

namespace tern::testing {

int time_scale() {
    const char* scale = std::getenv("TERN_TEST_TIME_SCALE");
    return scale != nullptr ? std::max(1, std::atoi(scale)) : 1;
}

std::string read_file(const std::string& path) {
    std::ifstream stream(path, std::ios::binary);
    std::stringstream text;
    text << stream.rdbuf();
    return text.str();
}

namespace {

using Clock = std::chrono::steady_clock;

// The port from the server's "listening on http://HOST:PORT" line; 0 until it is written.
// 0 until the port is there whole: the log is read while the server writes it, and a line read half-written
// ("...:363" of ":36399") once sent the readiness probe to the wrong port for the whole minute of start().
int port_from_log(const std::string& log) {
    const std::string marker = "listening on http://";
    const size_t at = log.find(marker);
    if (at == std::string::npos) return 0;
    const size_t colon = log.find(':', at + marker.size());
    if (colon == std::string::npos) return 0;
    size_t end = colon + 1;
    while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end]))) ++end;
    if (end == log.size() || end == colon + 1) return 0;  // the number may go on
    return std::atoi(log.c_str() + colon + 1);
}

httplib::Headers to_headers(const HeaderList& headers) {
    httplib::Headers converted;
    for (const auto& [name, value] : headers) converted.emplace(name, value);
    return converted;
}

HttpReply to_reply(const httplib::Result& result) {
    HttpReply reply;
    if (!result) {
        reply.error = httplib::to_string(result.error());
        return reply;
    }
    reply.status = result->status;
    reply.body = result->body;
    reply.retry_after = result->get_header_value("Retry-After");
    reply.content_type = result->get_header_value("Content-Type");
    return reply;
}

// Splits complete SSE events off the front of `buffer`; returns the data of each (one data line per event here).
std::vector<std::string> take_events(std::string& buffer) {
    std::vector<std::string> events;
    for (size_t end = buffer.find("\n\n"); end != std::string::npos; end = buffer.find("\n\n")) {
        const std::string event = buffer.substr(0, end);
        buffer.erase(0, end + 2);
        if (event.rfind("data: ", 0) == 0) events.push_back(event.substr(6));
    }
    return events;
}

}  // namespace

pid_t spawn_with_log(std::vector<std::string> words, const std::string& log_path, bool stdout_too) {
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
        const int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int null_fd = ::open("/dev/null", O_RDWR);
        ::dup2(null_fd, 0);
        ::dup2(stdout_too ? log_fd : null_fd, 1);
        ::dup2(log_fd, 2);
        ::execv(argv[0], argv.data());
        ::_exit(127);
    }
    return pid;
}

namespace {

// Made under a private name and renamed, so that test processes running at once never read half a file.
std::string synthetic_model(const std::string& preset) {
    const std::string path = temp_dir() + "/serve-" + preset + "-q8_0.gguf";
    if (std::filesystem::exists(path)) return path;
    const std::string partial = path + "." + std::to_string(::getpid());
    const CommandResult synth = run_tern("synth --preset " + preset + " --type q8_0 -o " + partial);
    if (synth.exit_code != 0) return "synth failed: " + synth.err;
    std::filesystem::rename(partial, path);
    return path;
}

}  // namespace

std::string tiny_model_path() { return synthetic_model("tiny"); }
std::string small_model_path() { return synthetic_model("small"); }

ServeProcess::~ServeProcess() {
    if (pid_ > 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
    }
}

void ServeProcess::launch(const std::vector<std::string>& args) {
    static std::atomic<int> counter{0};
    log_path_ = temp_dir() + "/serve_" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + ".log";
    // Emptied here, before the child exists: an earlier test process with the same pid (pids wrap) left a log under
    // this name, and start() read its "listening on" port until the child truncated the file, then polled that dead
    // port for a minute.
    std::ofstream(log_path_, std::ios::trunc).close();
    std::vector<std::string> words = {TERN_BINARY, command_, "--port", "0"};
    words.insert(words.end(), args.begin(), args.end());
    // Under a sanitizer the default KV budget (40% of memory, touched at start) is multiplied by shadow memory: two
    // such servers at once were killed for memory under ThreadSanitizer. The tests need far less.
    if (command_ == "serve" && time_scale() > 1 && std::find(args.begin(), args.end(), "--kv-cache-mem") == args.end()) {
        words.insert(words.end(), {"--kv-cache-mem", "0.5"});
    }
    exit_status_ = -2;
    pid_ = spawn_with_log(std::move(words), log_path_);
}

bool ServeProcess::wait_for_log(const std::string& text, std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
        if (log().find(text) != std::string::npos) return true;
        if (!running()) return log().find(text) != std::string::npos;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
}

std::string ServeProcess::start(const std::vector<std::string>& args, std::chrono::milliseconds timeout) {
    // Sanitizer builds (ThreadSanitizer above all) load and warm a model up many times slower.
    timeout *= time_scale();
    launch(args);
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
        if (!running()) return "tern " + command_ + " exited before it was ready; its log:\n" + log();
        if (port_ == 0) port_ = port_from_log(log());
        if (port_ != 0 && http_get(port_, "/ready").status == 200) return "";
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return "tern " + command_ + " was not ready in time; its log:\n" + log();
}

std::string ServeProcess::base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }

void ServeProcess::send_signal(int signal) const {
    if (pid_ > 0) ::kill(pid_, signal);
}

// Reaps the child when it has exited and keeps its status (a second waitpid() would find no child).
bool ServeProcess::running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == 0) return true;
    exit_status_ = status;
    pid_ = -1;
    return false;
}

int ServeProcess::wait(std::chrono::milliseconds timeout) {
    const auto deadline = Clock::now() + timeout;
    while (running()) {
        if (Clock::now() >= deadline) {
            ::kill(pid_, SIGKILL);
            ::waitpid(pid_, nullptr, 0);
            pid_ = -1;
            return -2;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (exit_status_ == -2) return -2;
    return WIFEXITED(exit_status_) ? WEXITSTATUS(exit_status_) : -1;
}

int ServeProcess::stop(std::chrono::milliseconds timeout) {
    send_signal(SIGTERM);
    return wait(timeout);
}

std::string ServeProcess::log() const { return read_file(log_path_); }

HttpReply http_get(int port, const std::string& path, const HeaderList& headers) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(5, 0);
    client.set_read_timeout(60 * time_scale(), 0);
    return to_reply(client.Get(path.c_str(), to_headers(headers)));
}

HttpReply http_post(int port, const std::string& path, const std::string& body, const HeaderList& headers) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(5, 0);
    client.set_read_timeout(60 * time_scale(), 0);
    return to_reply(client.Post(path.c_str(), to_headers(headers), body, "application/json"));
}

StreamReply post_stream(int port, const std::string& path, const std::string& body,
                        const std::function<bool(const std::string&)>& on_event, const HeaderList& headers) {
    httplib::Client client("127.0.0.1", port);
    client.set_connection_timeout(10, 0);
    client.set_read_timeout(60 * time_scale(), 0);
    StreamReply reply;
    std::string buffer;
    httplib::Request request;
    request.method = "POST";
    request.path = path;
    request.headers = to_headers(headers);
    request.set_header("Content-Type", "application/json");
    request.body = body;
    request.response_handler = [&](const httplib::Response& response) {
        reply.status = response.status;
        reply.retry_after = response.get_header_value("Retry-After");
        return true;
    };
    request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
        reply.body.append(data, size);
        if (reply.status != 200) return true;
        buffer.append(data, size);
        for (std::string& event : take_events(buffer)) {
            reply.done = reply.done || event == "[DONE]";
            const bool keep = !on_event || on_event(event);
            reply.events.push_back(std::move(event));
            if (!keep) {
                reply.dropped = true;
                return false;
            }
        }
        return true;
    };
    const auto start = Clock::now();
    const httplib::Result result = client.send(request);
    reply.elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    if (!result && !reply.dropped) reply.error = httplib::to_string(result.error());
    return reply;
}

double metric_value(const std::string& metrics_text, const std::string& sample) {
    std::istringstream lines(metrics_text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.size() > sample.size() && line.compare(0, sample.size(), sample) == 0 && line[sample.size()] == ' ') {
            return std::strtod(line.c_str() + sample.size() + 1, nullptr);
        }
    }
    return std::nan("");
}

bool is_valid_utf8(const std::string& text) {
    size_t idx = 0;
    while (idx < text.size()) {
        const auto lead = static_cast<unsigned char>(text[idx]);
        const size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3 : (lead >> 3) == 0x1e ? 4 : 0;
        if (length == 0 || idx + length > text.size()) return false;
        uint32_t code = length == 1 ? lead : lead & (0x7f >> length);
        for (size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[idx + k]);
            if ((next & 0xc0) != 0x80) return false;
            code = (code << 6) | (next & 0x3f);
        }
        const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < smallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
        idx += length;
    }
    return true;
}

namespace {

// Binds `fd` to a port the kernel picks on 127.0.0.1 and returns it (0 on failure).
int bind_any_loopback_port(int fd) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    socklen_t length = sizeof(address);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) {
        return 0;
    }
    return ntohs(address.sin_port);
}

}  // namespace

int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    const int port = bind_any_loopback_port(fd);
    ::close(fd);
    return port;
}

RefusingPort::RefusingPort() : fd_(::socket(AF_INET, SOCK_STREAM, 0)), port_(bind_any_loopback_port(fd_)) {}

RefusingPort::~RefusingPort() {
    if (fd_ >= 0) ::close(fd_);
}

std::string shell_quote(const std::string& word) {
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

ScriptResult run_node_script(const std::string& node, const std::string& dir, const HeaderList& env,
                             const std::string& script) {
    std::string command = "cd " + shell_quote(dir) + " &&";
    for (const auto& [name, value] : env) command += " " + name + "=" + shell_quote(value);
    command += " " + shell_quote(node) + " " + shell_quote(script) + " 2>&1";
    ScriptResult result;
    FILE* pipe = ::popen(command.c_str(), "r");
    if (pipe == nullptr) return {false, "popen failed"};
    char buffer[4096];
    for (size_t count = 0; (count = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) result.output.append(buffer, count);
    const int status = ::pclose(pipe);
    result.ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    return result;
}

}  // namespace tern::testing

// `tern serve` as a child process on a free loopback port, for end-to-end tests: started with the caller's flags,
// ready once /ready answers 200, stopped with SIGTERM. Its stderr (the start-up log and one JSON line per request)
// goes to a file, for assertions and failure messages. Plus the small HTTP helpers the tests share.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace tern::testing {

inline const std::string kStoriesModel = std::string(TERN_SHARED_DIR) + "/models/stories260K/stories260K-f32.gguf";

// The tiny synthetic llama (random weights, q8_0), made once and shared by the tests of this build.
std::string tiny_model_path();
// The `small` preset (8 layers, 512 wide, q8_0): steps of milliseconds, so that latencies dwarf the HTTP path.
std::string small_model_path();

class ServeProcess {
public:
    // `command`: the tern subcommand, "serve" or "route" (both log "listening on http://HOST:PORT" and answer /ready).
    explicit ServeProcess(std::string command = "serve") : command_(std::move(command)) {}
    ~ServeProcess();  // kills the server if a test left it running
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    // Runs `tern COMMAND --port 0 ARGS` and waits for /ready. Returns an empty string once ready, else what went
    // wrong (with the server's log).
    std::string start(const std::vector<std::string>& args,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60));
    // Runs `tern COMMAND --port 0 ARGS` without waiting for anything (for tests of start-up and failures).
    void launch(const std::vector<std::string>& args);
    // Waits until the server's log contains `text`; false after `timeout` or once the server exited.
    bool wait_for_log(const std::string& text, std::chrono::milliseconds timeout);
    int port() const { return port_; }
    std::string base_url() const;
    pid_t pid() const { return pid_; }

    void send_signal(int signal) const;
    // The exit code once the server exits; -1 when a signal ended it, -2 when it outlived `timeout` (then it is
    // killed).
    int wait(std::chrono::milliseconds timeout);
    int stop(std::chrono::milliseconds timeout = std::chrono::seconds(30));  // SIGTERM, then wait()
    bool running();
    std::string log() const;  // everything the server wrote to stderr so far

private:
    std::string command_;
    pid_t pid_ = -1;
    int exit_status_ = -2;  // waitpid's status once reaped; -2 while running or never started
    int port_ = 0;
    std::string log_path_;
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct HttpReply {
    int status = 0;  // 0: no response (see error)
    std::string body;
    std::string retry_after;
    std::string content_type;
    std::string error;
};

HttpReply http_get(int port, const std::string& path, const HeaderList& headers = {});
HttpReply http_post(int port, const std::string& path, const std::string& body, const HeaderList& headers = {});

struct StreamReply {
    int status = 0;              // 0: no response
    std::string retry_after;
    std::string body;            // the raw bytes received
    std::vector<std::string> events;  // the data of each SSE event, "[DONE]" included
    bool done = false;           // "[DONE]" arrived
    bool dropped = false;        // on_event asked to drop the connection
    std::string error;           // transport error, if any
    std::chrono::milliseconds elapsed{0};
};

// A streamed POST; `on_event` sees each event's data as it arrives and may return false to drop the connection.
StreamReply post_stream(int port, const std::string& path, const std::string& body,
                        const std::function<bool(const std::string&)>& on_event = nullptr,
                        const HeaderList& headers = {});

// The value of one sample in Prometheus text ("name" or "name{labels}" exactly as exposed); NaN when absent.
double metric_value(const std::string& metrics_text, const std::string& sample);

bool is_valid_utf8(const std::string& text);

// Starts `words` (words[0] is the program's path) as a child with stdin and stdout on /dev/null and stderr to
// `log_path` (`stdout_too`: stdout as well); returns its pid.
pid_t spawn_with_log(std::vector<std::string> words, const std::string& log_path, bool stdout_too = false);

// How many times slower than a release build the code under test runs (TERN_TEST_TIME_SCALE: 4 under ASan, 10
// under TSan, set by scripts/test); waits for the server stretch by it.
int time_scale();

// A whole file's bytes ("" when it cannot be read).
std::string read_file(const std::string& path);

// A TCP port that was free a moment ago on 127.0.0.1.
int free_port();

// A port on 127.0.0.1 where a connection is refused for as long as this lives: bound, never listening. A port that
// was free a moment ago is not that: with tests run in parallel, another test's server may be given it (a route test
// once relayed to a neighbour test's router that way).
class RefusingPort {
public:
    RefusingPort();
    ~RefusingPort();
    RefusingPort(const RefusingPort&) = delete;
    RefusingPort& operator=(const RefusingPort&) = delete;
    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

private:
    int fd_ = -1;
    int port_ = 0;
};

// `word` quoted for /bin/sh.
std::string shell_quote(const std::string& word);

struct ScriptResult {
    bool ok = false;     // exited with status 0
    std::string output;  // stdout and stderr together
};

// Runs `node SCRIPT` in `dir` with the environment variables `env` added (the official openai client's scenarios).
ScriptResult run_node_script(const std::string& node, const std::string& dir, const HeaderList& env,
                             const std::string& script);

}  // namespace tern::testing

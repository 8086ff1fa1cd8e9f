// Loopback OpenAI-compatible servers for the bench tests: they stream completions at a fixed pace, in the chunk
// formats of llama.cpp's server and of vLLM, listen on a free port of 127.0.0.1 only, and record what they received
// and when each chunk was written.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace tern::testing {

enum class ServerFlavor {
    kLlamaCpp,  // role-only first delta (chat), usage and timings in the finish chunk, then [DONE]
    kVllm,      // usage null in every chunk; with include_usage a last chunk with no choices carries it
};

enum class UsageMode {
    kReported,  // llama.cpp: always; vLLM: when the request asks via stream_options.include_usage
    kAbsent,    // never (older servers, or usage switched off)
};

struct FixtureOptions {
    ServerFlavor flavor = ServerFlavor::kVllm;
    UsageMode usage = UsageMode::kReported;
    std::chrono::microseconds ttft{20'000};   // request received -> first token chunk written
    std::chrono::microseconds itl{2'000};     // between token chunks (per chunk)
    int tokens_per_chunk = 1;
    int64_t eos_after = -1;                   // without ignore_eos, stop (finish_reason "stop") after this many tokens
    int64_t default_max_tokens = 16;
    int fail_every = 0;                       // every Nth request (1-based) is answered with fail_status
    int fail_status = 503;
    int64_t break_after_tokens = -1;          // drop the connection after this many tokens
    int64_t error_after_tokens = -1;          // send an error object in the stream after this many tokens
    std::string model_id = "fixture-model";
    int num_threads = 64;                     // server threads: the most concurrent connections served
};

struct ServedRequest {
    std::string path;
    nlohmann::json body;
    std::vector<std::pair<std::string, std::string>> headers;
    std::chrono::steady_clock::time_point received;
    std::vector<std::chrono::steady_clock::time_point> token_chunk_times;  // when each token chunk was written
    int64_t tokens = 0;
};

class FixtureServer {
public:
    explicit FixtureServer(FixtureOptions options);
    ~FixtureServer();
    FixtureServer(const FixtureServer&) = delete;
    FixtureServer& operator=(const FixtureServer&) = delete;

    int port() const { return port_; }
    std::string base_url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::vector<ServedRequest> requests() const;
    int64_t max_concurrent() const { return max_concurrent_.load(); }

    struct Impl;

private:
    std::unique_ptr<Impl> impl_;
    int port_ = 0;
    std::atomic<int64_t> max_concurrent_{0};
};

}  // namespace tern::testing

// A small OpenAI-compatible server for tern route's tests and benchmarks: it streams completion chunks at a
// configured rate (each with a configured logprob), answers /ready, /health and /metrics (with configured queue depth
// and KV use, under tern's metric names), and can misbehave on request (500, hang, broken SSE). It counts what it
// received and what its clients cancelled, so that a test can check what reached a backend. Built on tern's own HTTP
// layer; a ticker thread produces every stream's chunks.
#pragma once

#include <atomic>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "http/server.h"

namespace tern::testing {

enum class FixtureMode { kNormal, kStatus500, kStatus429, kHang, kBrokenSse };

struct FixtureOptions {
    int chunks = 8;                  // completion tokens per answer (one SSE chunk each); a request's max_tokens wins
    double chunks_per_second = 0;    // per stream; 0: as fast as possible
    double logprob = -0.5;           // of every token
    std::string token_text = "tok "; // the text of every token
    int max_concurrency = 0;         // answers under way beyond which a request gets 429; 0: no limit
    double waiting = 0;              // tern:num_requests_waiting in /metrics
    double kv_usage = 0;             // tern:kv_cache_usage_perc in /metrics
    bool ready = true;               // /ready answers 200 (else 503)
    FixtureMode mode = FixtureMode::kNormal;
    std::string finish_reason = "length";
    // A request whose prompt or messages contain `unsure_marker` gets `unsure_logprob` on every token: a workload
    // of easy and hard prompts for two-tier routing.
    std::string unsure_marker;
    double unsure_logprob = -3.0;
    int idle_timeout_s = 15;         // the fixture closes a keep-alive connection idle this long
};

class FixtureBackend {
public:
    explicit FixtureBackend(FixtureOptions options = {});
    ~FixtureBackend();

    int port() const { return port_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

    int requests() const { return requests_.load(); }    // generation requests received
    int cancelled() const { return cancelled_.load(); }  // answers whose client left first
    int active() const { return active_.load(); }        // answers under way
    int connections() const { return server_->num_connections(); }  // open client connections
    int64_t connections_closed() const { return server_->num_connections_closed(); }
    void set_mode(FixtureMode mode);
    void set_ready(bool ready);
    void set_load(double waiting, double kv_usage);

    class Handler;
    class Stream;

private:
    friend class Handler;
    friend class Stream;
    void ticker();
    void add_stream(const std::shared_ptr<Stream>& stream);

    FixtureOptions options_;
    mutable std::mutex mutex_;
    std::condition_variable wake_;
    bool stopping_ = false;
    std::vector<std::shared_ptr<Stream>> streams_;
    std::atomic<int> requests_{0};
    std::atomic<int> cancelled_{0};
    std::atomic<int> active_{0};
    std::unique_ptr<Handler> handler_;
    std::unique_ptr<http::Server> server_;
    std::thread serving_;
    std::thread ticker_;
    int port_ = 0;
};

}  // namespace tern::testing

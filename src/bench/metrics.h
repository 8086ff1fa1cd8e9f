// Summary figures of a run in the vocabulary of `vllm bench serve`: completed and failed requests, token totals,
// request / output / total token throughput, goodput under SLOs, and TTFT, TPOT, ITL and E2EL distributions in ms,
// plus concurrency and token rate over time and the client's own CPU cost.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "bench/request_record.h"
#include "bench/stats.h"

namespace tern::bench {

// --goodput ttft:MS tpot:MS e2el:MS: a request is good when it meets every given objective (DistServe's definition,
// as in vLLM; a request with one token has TPOT 0).
struct GoodputSlo {
    std::optional<double> ttft_ms;
    std::optional<double> tpot_ms;
    std::optional<double> e2el_ms;

    bool any() const { return ttft_ms || tpot_ms || e2el_ms; }
};

// Parses "KEY:VALUE" items (keys ttft, tpot, e2el; values in ms, >= 0).
Result<GoodputSlo> parse_goodput(const std::vector<std::string>& items);

// In-flight requests and output tokens over time, in buckets from the start of the run.
struct Timeline {
    double bucket_s = 1.0;
    std::vector<double> concurrency;          // time-averaged requests in flight in each bucket
    std::vector<double> output_tokens_per_s;  // tokens received in each bucket / bucket_s
};

struct Summary {
    int64_t completed = 0;
    int64_t failed = 0;
    // Requests sent again because the server had closed the kept-alive connection they went out on.
    int64_t stale_connection_retries = 0;
    int64_t total_input_tokens = 0;
    int64_t total_output_tokens = 0;
    double duration_s = 0;
    double request_throughput = 0;      // completed / duration
    double output_throughput = 0;       // output tokens / duration
    double total_token_throughput = 0;  // (input + output tokens) / duration
    std::optional<double> request_goodput;  // good requests / duration, when SLOs were given
    int64_t good_requests = 0;
    Distribution ttft_ms;
    Distribution tpot_ms;
    Distribution itl_ms;
    Distribution e2el_ms;
    Distribution queue_ms;              // client-side wait for a --max-concurrency slot
    double max_output_tokens_per_s = 0; // the busiest 1 s bucket
    int64_t max_concurrent_requests = 0;
    double mean_concurrency = 0;        // time-averaged requests in flight over the run
    int64_t output_tokens_from_usage = 0;  // completed requests whose output count came from usage
    int64_t input_tokens_from_usage = 0;
    std::map<std::string, int64_t> errors_by_kind;
    double client_cpu_s = 0;
    double streamed_tokens_per_cpu_s = 0;  // output tokens / client CPU seconds: the bench's own cost
    Timeline timeline;
};

// `duration_s` is the run's wall time; `client_cpu_s` what the bench spent.
Summary summarize(const std::vector<RequestRecord>& records, double duration_s, const GoodputSlo& slo,
                  double client_cpu_s);

// Buckets of `bucket_s` (0: about 100 buckets over the run, at least 10 ms each). Every sent request counts as in
// flight from its start to its end; a token chunk's tokens are spread evenly over the request's output count.
Timeline build_timeline(const std::vector<RequestRecord>& records, double duration_s, double bucket_s);

}  // namespace tern::bench

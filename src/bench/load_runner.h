// Drives a benchmark run: sends requests at the times an arrival process gives (open loop), holding at most
// --max-concurrency in flight (closed loop when the rate is inf), for a number of requests and optionally a duration.
// Each in-flight request has its own thread and connection; threads are started on demand and reused.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "bench/arrivals.h"
#include "bench/request_record.h"
#include "bench/request_sender.h"
#include "bench/workload.h"

namespace tern::bench {

// The most requests in flight when --max-concurrency is not given; later arrivals wait for a slot (and that wait is
// recorded as client queue time), so a run never starts more than this many threads.
inline constexpr int64_t kMaxInFlight = 1024;

struct LoadOptions {
    ArrivalOptions arrivals;
    int64_t max_concurrency = 0;  // 0: up to kMaxInFlight
    int64_t num_requests = 0;     // requests to send, cycling through the workload
    double duration_s = 0;        // > 0: send no request that would arrive later than this
    uint64_t seed = 0;            // for the arrival gaps
};

struct LoadResult {
    Clock::time_point start;             // time zero of the records' times (to line them up with server-side logs)
    std::vector<RequestRecord> records;  // sorted by index
    double duration_s = 0;               // from the first arrival to the last response
    double client_cpu_s = 0;             // CPU time of the dispatching and request threads together
    int64_t num_threads = 0;             // request threads started
};

// Receives progress from request threads; implementations must be thread-safe.
class LoadObserver {
public:
    virtual ~LoadObserver() = default;
    virtual void on_sent(int64_t index) {}
    virtual void on_done(const RequestRecord& record) {}
};

// Makes one sender per request thread.
using SenderFactory = std::function<std::unique_ptr<RequestSender>()>;

// Request `index` of the run; called from request threads, so it must be thread-safe (Workload::at is).
using SpecFn = std::function<RequestSpec(int64_t index)>;

// Runs the load and returns every request's record. `observer` may be null. Blocks until all responses are in; the
// senders' own timeouts bound how long that takes.
LoadResult run_load(const SpecFn& spec_at, const LoadOptions& options, const SenderFactory& make_sender,
                    LoadObserver* observer);
// The same over a fixed list of requests, cycled.
LoadResult run_load(const std::vector<RequestSpec>& workload, const LoadOptions& options,
                    const SenderFactory& make_sender, LoadObserver* observer);

// CPU seconds the calling thread has used.
double thread_cpu_seconds();

}  // namespace tern::bench

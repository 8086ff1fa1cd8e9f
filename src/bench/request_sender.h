// Sends one benchmark request over HTTP and measures it: builds the OpenAI body from a RequestSpec, streams the answer
// through a StreamAccumulator and classifies failures. The RequestSender interface lets the load runner be tested
// with a fake that needs no network.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "api/openai_types.h"
#include "bench/request_record.h"
#include "bench/stream_accumulator.h"
#include "bench/workload.h"
#include "net/http_client.h"

namespace tern::bench {

// What every request of a run shares.
struct RequestTemplate {
    api::Endpoint endpoint = api::Endpoint::kCompletions;
    std::string path = "/v1/completions";  // --endpoint, joined to the base URL
    std::string model;
    bool ignore_eos = false;
    bool include_usage = true;             // ask for stream_options.include_usage
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<int64_t> top_k;
    nlohmann::json extra_body = nlohmann::json::object();  // --extra-body, merged into every request
};

api::GenerationRequest make_request(const RequestTemplate& request_template, const RequestSpec& spec);

// Combines the transport outcome and the decoded stream of a request sent at `start` into a record (index and arrival
// are left to the caller).
RequestRecord make_record(const net::StreamOutcome& outcome, const StreamMeasurement& measurement,
                          const RequestSpec& spec, Clock::time_point run_start, Clock::time_point start);

class RequestSender {
public:
    virtual ~RequestSender() = default;
    // Sends `spec` and blocks until the response is complete or failed. Called from one thread at a time.
    virtual RequestRecord send(const RequestSpec& spec, Clock::time_point run_start) = 0;
};

class HttpRequestSender final : public RequestSender {
public:
    HttpRequestSender(const net::BaseUrl& base_url, const net::HttpClientOptions& options,
                      const RequestTemplate& request_template);
    RequestRecord send(const RequestSpec& spec, Clock::time_point run_start) override;

private:
    net::HttpClient client_;
    const RequestTemplate& template_;
};

}  // namespace tern::bench

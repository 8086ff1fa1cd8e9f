#include "bench/request_sender.h"

#include <fmt/format.h>

namespace tern::bench {
namespace {

ErrorKind error_kind_of(net::HttpErrorKind kind) {
    switch (kind) {
        case net::HttpErrorKind::kNone: return ErrorKind::kNone;
        case net::HttpErrorKind::kConnect: return ErrorKind::kConnect;
        case net::HttpErrorKind::kTimeout: return ErrorKind::kTimeout;
        case net::HttpErrorKind::kRead: return ErrorKind::kRead;
        case net::HttpErrorKind::kWrite: return ErrorKind::kWrite;
        case net::HttpErrorKind::kStatus: return ErrorKind::kHttpStatus;
        case net::HttpErrorKind::kCanceled: return ErrorKind::kCanceled;
        case net::HttpErrorKind::kOther: return ErrorKind::kOther;
    }
    return ErrorKind::kOther;
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
    return std::chrono::duration<double>(to - from).count();
}

// Decides success or the error; stream-level problems win over the kCanceled that stopping the stream causes.
void classify(const net::StreamOutcome& outcome, const StreamMeasurement& measurement, RequestRecord* record) {
    if (measurement.stream_error) {
        record->error_kind = ErrorKind::kStreamError;
        record->error = fmt::format("error in the stream: {}", measurement.stream_error->message);
    } else if (!measurement.bad_chunk.empty()) {
        record->error_kind = ErrorKind::kBadStream;
        record->error = measurement.bad_chunk;
    } else if (!outcome.ok()) {
        record->error_kind = error_kind_of(outcome.error_kind);
        record->error = outcome.error_message;
        if (outcome.error_kind == net::HttpErrorKind::kStatus) {
            const api::ApiError body = api::parse_error_body(outcome.error_body);
            if (!body.message.empty()) record->error += ": " + body.message;
        }
    } else if (!measurement.got_token) {
        record->error_kind = ErrorKind::kNoTokens;
        record->error = "the stream ended without a generated token";
    }
    record->success = record->error_kind == ErrorKind::kNone;
}

}  // namespace

api::GenerationRequest make_request(const RequestTemplate& request_template, const RequestSpec& spec) {
    api::GenerationRequest request;
    request.endpoint = request_template.endpoint;
    request.model = request_template.model;
    if (request.endpoint == api::Endpoint::kChatCompletions) {
        request.messages.push_back({"user", spec.prompt});
    } else if (!spec.prompt_token_ids.empty()) {
        request.prompts.push_back({.token_ids = spec.prompt_token_ids, .is_tokens = true});
    } else {
        request.prompts.push_back({.text = spec.prompt});
    }
    request.max_tokens = spec.output_len;
    request.stream = true;
    request.include_usage = request_template.include_usage;
    request.ignore_eos = request_template.ignore_eos;
    request.temperature = request_template.temperature;
    request.top_p = request_template.top_p;
    request.top_k = request_template.top_k;
    request.extra = request_template.extra_body;
    return request;
}

RequestRecord make_record(const net::StreamOutcome& outcome, const StreamMeasurement& measurement,
                          const RequestSpec& spec, Clock::time_point run_start, Clock::time_point start) {
    RequestRecord record;
    record.start_s = seconds_between(run_start, start);
    record.http_status = outcome.status;
    record.stale_connection_retries = outcome.stale_connection_retries;
    record.requested_output_tokens = spec.output_len;
    record.finish_reason = measurement.finish_reason;
    record.ttft_s = measurement.ttft_s;
    record.itl_s = measurement.itl_s;
    classify(outcome, measurement, &record);
    // vLLM ends a request at its last token chunk, so a trailing usage chunk or [DONE] does not stretch TPOT.
    record.e2el_s = record.success ? measurement.last_token_s : seconds_between(start, outcome.finished);
    record.input_tokens = spec.input_len;
    if (measurement.usage && measurement.usage->prompt_tokens > 0) {
        record.input_tokens = measurement.usage->prompt_tokens;
        record.input_tokens_from_usage = true;
    }
    record.output_tokens = measurement.num_token_chunks;
    if (measurement.usage) {
        record.output_tokens = measurement.usage->completion_tokens;
        record.output_tokens_from_usage = true;
    }
    if (!record.success) record.output_tokens = 0;
    return record;
}

HttpRequestSender::HttpRequestSender(const net::BaseUrl& base_url, const net::HttpClientOptions& options,
                                     const RequestTemplate& request_template)
    : client_(base_url, options), template_(request_template) {}

RequestRecord HttpRequestSender::send(const RequestSpec& spec, Clock::time_point run_start) {
    const std::string body = api::to_json(make_request(template_, spec)).dump();
    const Clock::time_point start = Clock::now();
    StreamAccumulator accumulator(start);
    const net::StreamOutcome outcome =
        client_.post_stream(template_.path, body, [&accumulator](std::string_view bytes, Clock::time_point arrived) {
            return accumulator.feed(bytes, arrived);
        });
    if (outcome.ok()) accumulator.finish(outcome.finished);
    return make_record(outcome, accumulator.measurement(), spec, run_start, start);
}

}  // namespace tern::bench

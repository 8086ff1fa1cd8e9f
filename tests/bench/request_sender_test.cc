#include "bench/request_sender.h"

#include <gtest/gtest.h>

namespace tern::bench {
namespace {

using std::chrono::milliseconds;

TEST(RequestSender, BodiesFollowTheEndpointAndOptions) {
    RequestTemplate request_template;
    request_template.model = "m";
    request_template.ignore_eos = true;
    request_template.temperature = 0.0;
    request_template.extra_body = {{"min_tokens", 2}};
    RequestSpec spec;
    spec.prompt = "hello there";
    spec.output_len = 64;
    nlohmann::json body = api::to_json(make_request(request_template, spec));
    EXPECT_EQ(body["prompt"], "hello there");
    EXPECT_EQ(body["max_tokens"], 64);
    EXPECT_EQ(body["stream"], true);
    EXPECT_EQ(body["stream_options"]["include_usage"], true);
    EXPECT_EQ(body["ignore_eos"], true);
    EXPECT_EQ(body["temperature"], 0.0);
    EXPECT_EQ(body["min_tokens"], 2);

    request_template.endpoint = api::Endpoint::kChatCompletions;
    body = api::to_json(make_request(request_template, spec));
    EXPECT_EQ(body["messages"][0]["role"], "user");
    EXPECT_EQ(body["messages"][0]["content"], "hello there");

    request_template.endpoint = api::Endpoint::kCompletions;
    spec.prompt.clear();
    spec.prompt_token_ids = {1001, 1002};
    body = api::to_json(make_request(request_template, spec));
    EXPECT_EQ(body["prompt"], nlohmann::json({1001, 1002}));
}

struct RecordCase {
    net::StreamOutcome outcome;
    StreamMeasurement measurement;
};

RecordCase good_case() {
    RecordCase c;
    c.outcome.status = 200;
    c.outcome.finished = Clock::time_point{} + milliseconds(100);
    c.measurement.got_token = true;
    c.measurement.ttft_s = 0.02;
    c.measurement.itl_s = {0.01, 0.01};
    c.measurement.last_token_s = 0.04;
    c.measurement.num_token_chunks = 3;
    return c;
}

TEST(RequestSender, RecordsTakeTokensFromUsageElseCountChunks) {
    RequestSpec spec;
    spec.input_len = 9;
    spec.output_len = 16;
    RecordCase c = good_case();
    RequestRecord counted = make_record(c.outcome, c.measurement, spec, Clock::time_point{}, Clock::time_point{});
    EXPECT_TRUE(counted.success);
    EXPECT_EQ(counted.output_tokens, 3);
    EXPECT_FALSE(counted.output_tokens_from_usage);
    EXPECT_EQ(counted.input_tokens, 9);
    EXPECT_DOUBLE_EQ(counted.e2el_s, 0.04);  // the last token, not the end of the response
    EXPECT_NEAR(counted.tpot_s(), 0.01, 1e-12);
    c.measurement.usage = api::Usage{12, 6, 18};
    RequestRecord from_usage = make_record(c.outcome, c.measurement, spec, Clock::time_point{}, Clock::time_point{});
    EXPECT_EQ(from_usage.output_tokens, 6);
    EXPECT_TRUE(from_usage.output_tokens_from_usage);
    EXPECT_EQ(from_usage.input_tokens, 12);
    EXPECT_NEAR(from_usage.tpot_s(), 0.02 / 5, 1e-12);
}

TEST(RequestSender, FailuresAreClassifiedByKind) {
    RequestSpec spec;
    auto kind_of = [&](const RecordCase& c) {
        return make_record(c.outcome, c.measurement, spec, Clock::time_point{}, Clock::time_point{}).error_kind;
    };
    RecordCase status = good_case();
    status.outcome.status = 503;
    status.outcome.error_kind = net::HttpErrorKind::kStatus;
    status.outcome.error_message = "HTTP 503 from /v1/completions";
    status.outcome.error_body = R"({"object":"error","message":"overloaded"})";
    const RequestRecord failed = make_record(status.outcome, status.measurement, spec, {}, {});
    EXPECT_EQ(failed.error_kind, ErrorKind::kHttpStatus);
    EXPECT_FALSE(failed.success);
    EXPECT_EQ(failed.output_tokens, 0);
    EXPECT_NE(failed.error.find("overloaded"), std::string::npos);
    EXPECT_DOUBLE_EQ(failed.e2el_s, 0.1);

    RecordCase broken = good_case();
    broken.outcome.error_kind = net::HttpErrorKind::kRead;
    EXPECT_EQ(kind_of(broken), ErrorKind::kRead);
    RecordCase stream_error = good_case();
    stream_error.outcome.error_kind = net::HttpErrorKind::kCanceled;
    stream_error.measurement.stream_error = api::ApiError{"oom", "", ""};
    EXPECT_EQ(kind_of(stream_error), ErrorKind::kStreamError);
    RecordCase garbled = good_case();
    garbled.measurement.bad_chunk = "stream chunk is not JSON";
    EXPECT_EQ(kind_of(garbled), ErrorKind::kBadStream);
    RecordCase empty = good_case();
    empty.measurement.got_token = false;
    EXPECT_EQ(kind_of(empty), ErrorKind::kNoTokens);
    EXPECT_EQ(error_kind_from_string(to_string(ErrorKind::kNoTokens)), ErrorKind::kNoTokens);
}

}  // namespace
}  // namespace tern::bench

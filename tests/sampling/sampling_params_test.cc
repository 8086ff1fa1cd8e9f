#include "sampling/sampling_params.h"

#include <cmath>
#include <limits>
#include <string>

#include <gtest/gtest.h>

namespace tern {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

// Expects validate() to fail with kInvalidArgument and a message containing every piece in `pieces`.
void expect_rejected(const SamplingParams& params, std::initializer_list<std::string> pieces) {
    Status status = params.validate();
    ASSERT_FALSE(status.is_ok());
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
    for (const std::string& piece : pieces) {
        EXPECT_NE(status.message().find(piece), std::string::npos) << "'" << piece << "' not in: " << status.message();
    }
}

template <typename Fn>
SamplingParams with(Fn&& change) {
    SamplingParams params;
    change(params);
    return params;
}

TEST(SamplingParamsTest, DefaultsAreValidAndTurnEveryFilterOff) {
    SamplingParams params;
    EXPECT_TRUE(params.validate().is_ok());
    EXPECT_EQ(params.temperature, 1.0f);
    EXPECT_EQ(params.top_k, 0);
    EXPECT_EQ(params.top_p, 1.0f);
    EXPECT_EQ(params.min_p, 0.0f);
    EXPECT_EQ(params.repetition_penalty, 1.0f);
    EXPECT_EQ(params.presence_penalty, 0.0f);
    EXPECT_EQ(params.frequency_penalty, 0.0f);
    EXPECT_EQ(params.penalty_last_n, 64);
}

TEST(SamplingParamsTest, AcceptsBoundaryValues) {
    SamplingParams params;
    params.temperature = 0.0f;
    params.top_k = 1;
    params.top_p = 1e-9f;
    params.min_p = 1.0f;
    params.repetition_penalty = 1e-3f;
    params.presence_penalty = -2.0f;
    params.frequency_penalty = 2.0f;
    params.penalty_last_n = -1;
    EXPECT_TRUE(params.validate().is_ok()) << params.validate().message();
    params.top_p = 1.0f;
    params.min_p = 0.0f;
    params.presence_penalty = 2.0f;
    params.frequency_penalty = -2.0f;
    params.penalty_last_n = 0;
    EXPECT_TRUE(params.validate().is_ok()) << params.validate().message();
}

TEST(SamplingParamsTest, RejectsTemperature) {
    expect_rejected(with([](auto& p) { p.temperature = -0.5f; }), {"temperature", ">= 0", "-0.5"});
    expect_rejected(with([](auto& p) { p.temperature = kNaN; }), {"temperature"});
    expect_rejected(with([](auto& p) { p.temperature = kInf; }), {"temperature", "finite"});
}

TEST(SamplingParamsTest, RejectsTopK) {
    expect_rejected(with([](auto& p) { p.top_k = -1; }), {"top_k must be >= 0", "got -1"});
}

TEST(SamplingParamsTest, RejectsTopP) {
    expect_rejected(with([](auto& p) { p.top_p = 1.5f; }), {"top_p must be in (0, 1]", "got 1.5"});
    expect_rejected(with([](auto& p) { p.top_p = 0.0f; }), {"top_p must be in (0, 1]", "got 0"});
    expect_rejected(with([](auto& p) { p.top_p = kNaN; }), {"top_p"});
}

TEST(SamplingParamsTest, RejectsMinP) {
    expect_rejected(with([](auto& p) { p.min_p = -0.1f; }), {"min_p must be in [0, 1]", "got -0.1"});
    expect_rejected(with([](auto& p) { p.min_p = 1.25f; }), {"min_p", "got 1.25"});
    expect_rejected(with([](auto& p) { p.min_p = kNaN; }), {"min_p"});
}

TEST(SamplingParamsTest, RejectsPenalties) {
    expect_rejected(with([](auto& p) { p.repetition_penalty = 0.0f; }), {"repetition_penalty", "> 0", "got 0"});
    expect_rejected(with([](auto& p) { p.repetition_penalty = -1.0f; }), {"repetition_penalty", "got -1"});
    expect_rejected(with([](auto& p) { p.repetition_penalty = kInf; }), {"repetition_penalty"});
    expect_rejected(with([](auto& p) { p.presence_penalty = 2.5f; }), {"presence_penalty", "[-2, 2]", "got 2.5"});
    expect_rejected(with([](auto& p) { p.presence_penalty = kNaN; }), {"presence_penalty"});
    expect_rejected(with([](auto& p) { p.frequency_penalty = -3.0f; }), {"frequency_penalty", "[-2, 2]", "got -3"});
    expect_rejected(with([](auto& p) { p.penalty_last_n = -2; }), {"penalty_last_n must be >= -1", "got -2"});
}

}  // namespace
}  // namespace tern

// The engine on its own thread: an exception on that thread (a throwing observer, an allocation failure) fails every
// request in flight with kInternal, stops admissions and tells the failure observer, instead of ending the process
// with no word; requests cut off by the drain timeout fail with kUnavailable rather than finishing as if stopped; and
// through the server's request path those become 500 and 503.
#include <gtest/gtest.h>


#include <atomic>
#include <new>
#include <stdexcept>
#include <thread>

#include "engine/engine.h"
#include "server/choice_runner.h"
#include "serving/async_engine.h"
#include "synthetic_model_suite.h"
#include "tokenizer/tokenizer.h"

namespace tern::serving {
namespace {

using namespace std::chrono_literals;

class AsyncEngineTest : public testing::SyntheticModelSuite<3> {
public:
    static std::unique_ptr<engine::Engine> make_engine() {
        engine::EngineConfig config;
        config.kv_cache_bytes = 8 << 20;
        auto engine = engine::Engine::create(*model_, *pool_, config);
        EXPECT_TRUE(engine.is_ok()) << engine.status().message();
        return std::move(engine.value());
    }

    static EngineRequest request(RequestId id, int max_tokens) {
        EngineRequest request{.id = id, .prompt = {1, 5, 9, 14}, .max_tokens = max_tokens};
        request.sampling.temperature = 0.0f;
        return request;
    }

    // Reads the stream until it is closed; returns the outputs seen.
    static std::vector<RequestOutput> read_all(RequestStream& stream) {
        std::vector<RequestOutput> outputs;
        for (int idx = 0; idx < 2000 && !stream.closed(); ++idx) {
            if (auto output = stream.next(10ms)) outputs.push_back(std::move(*output));
        }
        return outputs;
    }

};

void expect_engine_thread_failure(AsyncEngine& engine, RequestStream& stream, const std::atomic<int>& num_failures,
                                  const std::string& reason) {
    AsyncEngineTest::read_all(stream);
    ASSERT_TRUE(stream.closed());
    EXPECT_EQ(stream.error().code(), StatusCode::kInternal);
    EXPECT_NE(stream.error().message().find(reason), std::string::npos) << stream.error().message();
    EXPECT_TRUE(engine.failed());
    EXPECT_FALSE(engine.accepting());
    for (int idx = 0; idx < 100 && num_failures.load() == 0; ++idx) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(num_failures.load(), 1) << "the observer hears of it (after the streams fail)";
    auto refused = engine.submit(AsyncEngineTest::request(99, 2));
    ASSERT_FALSE(refused.is_ok());
    EXPECT_EQ(refused.status().code(), StatusCode::kUnavailable);
    EXPECT_TRUE(engine.drain(1s)) << "nothing is left in flight";
}

TEST_F(AsyncEngineTest, ThrowingFinishObserverFailsRequestsInsteadOfEndingTheProcess) {
    std::atomic<int> num_failures{0};
    AsyncEngine engine(
        make_engine(), [](const RequestOutput&) { throw std::runtime_error("the finish observer broke"); }, nullptr,
        [&](const std::string&) { ++num_failures; });
    auto first = engine.submit(request(1, 2));
    auto second = engine.submit(request(2, 50));
    ASSERT_TRUE(first.is_ok() && second.is_ok());
    expect_engine_thread_failure(engine, *first.value(), num_failures, "the finish observer broke");
    read_all(*second.value());
    EXPECT_EQ(second.value()->error().code(), StatusCode::kInternal) << "the other request in flight fails too";
}

TEST_F(AsyncEngineTest, AllocationFailureOnTheEngineThreadFailsRequests) {
    std::atomic<int> num_failures{0};
    std::atomic<int> num_steps{0};
    AsyncEngine engine(
        make_engine(), nullptr,
        [&](const engine::EngineStats&) {
            if (++num_steps == 2) throw std::bad_alloc();
        },
        [&](const std::string&) { ++num_failures; });
    auto stream = engine.submit(request(1, 20));
    ASSERT_TRUE(stream.is_ok());
    expect_engine_thread_failure(engine, *stream.value(), num_failures, "bad_alloc");
}

TEST_F(AsyncEngineTest, DrainTimeoutFailsTheRestWithUnavailable) {
    // A millisecond per step: the long request takes half a second, far past the drain timeout.
    AsyncEngine engine(make_engine(), nullptr, [](const engine::EngineStats&) { std::this_thread::sleep_for(1ms); });
    auto finished = engine.submit(request(1, 1));
    auto cut_off = engine.submit(request(2, 500));
    ASSERT_TRUE(finished.is_ok() && cut_off.is_ok());
    while (!finished.value()->closed()) finished.value()->next(10ms);
    EXPECT_FALSE(engine.drain(20ms));
    const std::vector<RequestOutput> outputs = read_all(*cut_off.value());
    ASSERT_TRUE(cut_off.value()->closed());
    EXPECT_EQ(cut_off.value()->error().code(), StatusCode::kUnavailable);
    for (const RequestOutput& output : outputs) EXPECT_FALSE(output.finish_reason) << "no finish, a failure";
    for (int idx = 0; idx < 100 && engine.stats().engine.kv_usage > 0.0; ++idx) std::this_thread::sleep_for(10ms);
    EXPECT_EQ(engine.stats().engine.kv_usage, 0.0) << "its blocks are freed (the counts are published a step later)";
}

TEST_F(AsyncEngineTest, ClientAbortStillEndsWithAnAbortOutput) {
    AsyncEngine engine(make_engine());
    auto stream = engine.submit(request(1, 400));
    ASSERT_TRUE(stream.is_ok());
    engine.abort(1);
    const std::vector<RequestOutput> outputs = read_all(*stream.value());
    ASSERT_FALSE(outputs.empty());
    EXPECT_EQ(outputs.back().finish_reason, engine::FinishReason::kAbort);
    EXPECT_TRUE(stream.value()->error().is_ok());
}

// Through the server's request path: an engine thread failure is a 500 with OpenAI's error body.
TEST_F(AsyncEngineTest, EngineFailureReachesTheClientAs500) {
    auto tokenizer = Tokenizer::from_gguf(model_->file());
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    AsyncEngine engine(make_engine(), [](const RequestOutput&) { throw std::runtime_error("observer failure"); });
    server::ServingContext context{engine, *tokenizer.value(), "tiny", 512, nullptr};
    server::CompletionRequest completion;
    completion.prompts.push_back(server::PromptInput{.text = "hello there"});
    completion.max_tokens = 3;
    auto prepared = server::prepare_request(context, std::move(completion));
    ASSERT_TRUE(std::holds_alternative<server::PreparedRequest>(prepared));
    auto& ready = std::get<server::PreparedRequest>(prepared);
    server::ChoiceRunner runner(context, ready);
    const auto start = std::chrono::steady_clock::now();
    ASSERT_FALSE(runner.submit(start).has_value());
    const server::Outcome outcome = server::run_request(runner, ready, nullptr, start);
    EXPECT_EQ(outcome.status, 500) << outcome.body.dump();
    EXPECT_NE(outcome.body.dump().find("observer failure"), std::string::npos) << outcome.body.dump();
}

}  // namespace
}  // namespace tern::serving

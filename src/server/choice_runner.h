// The choices of one request in flight: one engine request each, their outputs turned into text and logprobs.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "server/completion_handler.h"
#include "server/choice_text.h"
#include "tools/reasoning.h"

namespace tern::server {

// What one engine output added to a choice.
struct ChoiceDelta {
    int index = 0;
    std::string text;
    std::vector<TokenLogprob> logprobs;
    std::optional<std::string> finish_reason;
    bool first = false;  // the choice's first delta
    std::vector<tools::ToolCallDelta> tool_calls;  // with tool parsing: `text` is then the content outside calls
    std::string reasoning;  // a reasoning model's thinking (`text` is then its answer)
};

class ChoiceRunner {
public:
    ChoiceRunner(ServingContext& context, const PreparedRequest& prepared);
    ~ChoiceRunner();  // aborts whatever is still running

    // Submits every choice; on failure the outcome to send (429 when the queue is full, 503 while draining).
    std::optional<Outcome> submit(std::chrono::steady_clock::time_point arrival);
    // Waits (up to `timeout`) for the next output of any choice; nullopt when nothing came.
    std::optional<ChoiceDelta> next(std::chrono::milliseconds timeout);
    // The next output of any choice that has one now, without waiting.
    std::optional<ChoiceDelta> next_ready();
    // `listener` is called on the engine thread whenever a choice gets an output (see RequestStream::set_listener);
    // the destructor clears it before anything else goes.
    void set_listener(const std::function<void()>& listener);
    bool done() const;
    void abort_all();
    // Why a choice failed after submit, if one did: an engine-side rejection (a race with the queue limits), the drain
    // timeout (503) or an engine failure (500).
    std::optional<Outcome> failure() const { return failure_; }

    // Every generated choice, best_of's extra ones included, by index.
    const std::vector<ChoiceResult>& results() const { return results_; }
    // The choices the client gets: results(), or with best_of the n of each prompt with the highest cumulative
    // log-probability (best first), renumbered. Call once done().
    std::vector<ChoiceResult> returned_results() const;
    api::Usage usage() const;
    std::optional<std::chrono::steady_clock::time_point> first_token_time() const { return first_token_time_; }
    // Milliseconds between the tokens as the server took them (all choices together), for the request log line:
    // what a client's inter-token gaps are compared with (scripts/bench-latency).
    const std::vector<double>& token_gaps_ms() const { return token_gaps_ms_; }

private:
    struct Choice;
    std::optional<ChoiceDelta> take(Choice& choice, engine::RequestOutput output);
    void take_token(Choice& choice, const engine::RequestOutput& output, ChoiceDelta& delta);
    void take_tool_calls(Choice& choice, ChoiceDelta& delta);
    void take_reasoning(Choice& choice, ChoiceDelta& delta);
    void take_prompt_logprobs(const Choice& choice, const std::vector<engine::TokenLogprobs>& positions,
                              ChoiceDelta& delta);
    int num_samples() const;
    int num_prompt_logprobs() const;
    TokenLogprob to_logprob(int32_t token, const engine::TokenLogprobs& logprobs) const;

    ServingContext& context_;
    const PreparedRequest& prepared_;
    std::vector<std::unique_ptr<Choice>> choices_;
    std::vector<ChoiceResult> results_;
    std::optional<Outcome> failure_;
    std::optional<std::chrono::steady_clock::time_point> first_token_time_;
    std::chrono::steady_clock::time_point last_token_time_;
    std::vector<double> token_gaps_ms_;
    size_t cursor_ = 0;
};

}  // namespace tern::server

#include "server/choice_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/check.h"
#include "trace/trace.h"

namespace tern::server {

struct ChoiceRunner::Choice {
    int index;
    size_t prompt_idx;
    engine::RequestId engine_id;
    std::shared_ptr<serving::RequestStream> stream;
    ChoiceText text;
    bool done = false;
    bool first = true;
    double cumulative_logprob = 0.0;  // of the sampled tokens, for best_of
    int64_t num_cached_prompt_tokens = 0;
    std::unique_ptr<tools::ToolCallParser> tool_parser;  // when the request's text is parsed for tool calls
    std::unique_ptr<tools::ReasoningParser> reasoning;   // a reasoning model's chat: thinking apart from the answer
};

namespace {

// The model's end tokens (unless ignore_eos) and the request's stop_token_ids: ignore_eos does not drop those, as
// in vLLM.
std::vector<int32_t> engine_stop_tokens(const Tokenizer& tokenizer, const CompletionRequest& request) {
    std::vector<int32_t> ids;
    const auto add = [&ids](int32_t id) {
        if (id >= 0 && std::find(ids.begin(), ids.end(), id) == ids.end()) ids.push_back(id);
    };
    if (!request.ignore_eos) {
        for (int32_t id : {tokenizer.eos_id(), tokenizer.eot_id(), tokenizer.eom_id()}) add(id);
    }
    for (int32_t id : request.stop_token_ids) add(id);
    return ids;
}

}  // namespace

ChoiceRunner::ChoiceRunner(ServingContext& context, const PreparedRequest& prepared)
    : context_(context), prepared_(prepared) {}

ChoiceRunner::~ChoiceRunner() {
    for (auto& choice : choices_) choice->stream->set_listener(nullptr);
    abort_all();
}

void ChoiceRunner::set_listener(const std::function<void()>& listener) {
    for (auto& choice : choices_) choice->stream->set_listener(listener);
}

// `arrival`: when the HTTP request was received, so that the server's TTFT and queue time include the wait for
// the engine thread to take the request (a step may be running), as a client sees it.
std::optional<Outcome> ChoiceRunner::submit(std::chrono::steady_clock::time_point arrival) {
    const CompletionRequest& request = prepared_.request;
    const std::vector<int32_t> stop_tokens = engine_stop_tokens(context_.tokenizer, request);
    // best_of ranks choices by the log-probability of their tokens, which the engine reports when asked for
    // logprobs: 0 alternatives is enough, and the client sees logprobs only if it asked for them.
    const bool ranked = num_samples() > request.n;
    const int num_top_logprobs = request.logprobs ? request.top_logprobs : (ranked ? 0 : -1);
    for (size_t prompt_idx = 0; prompt_idx < prepared_.prompt_tokens.size(); ++prompt_idx) {
        for (int sample_idx = 0; sample_idx < num_samples(); ++sample_idx) {
            engine::EngineRequest engine_request{.id = context_.engine.next_id(),
                                                 .prompt = prepared_.prompt_tokens[prompt_idx],
                                                 .max_tokens = prepared_.max_tokens,
                                                 .priority = request.priority,
                                                 .sampling = request.sampling,
                                                 .stop_tokens = stop_tokens,
                                                 .num_top_logprobs = num_top_logprobs,
                                                 .num_prompt_logprobs = num_prompt_logprobs(),
                                                 .arrival = arrival};
            engine_request.sampling.seed += static_cast<uint64_t>(sample_idx);  // n samples differ, reproducibly
            engine_request.cache_salt = request.cache_salt;
            engine_request.grammar = prepared_.grammar;
            const engine::RequestId id = engine_request.id;
            auto stream = context_.engine.submit(std::move(engine_request));
            if (!stream.is_ok()) {
                abort_all();
                return status_outcome(stream.status());
            }
            const int index = static_cast<int>(choices_.size());
            const std::optional<ToolParsing>& tools = prepared_.tool_parsing;
            choices_.push_back(std::unique_ptr<Choice>(
                new Choice{index, prompt_idx, id, std::move(stream.value()),
                           ChoiceText(context_.tokenizer, request.stop, request.sampling.min_tokens,
                                      tools && tools->render_special)}));
            if (tools) choices_.back()->tool_parser = make_tool_parser(*tools);
            if (const std::optional<ThinkingFirst>& thinking = prepared_.thinking) {
                choices_.back()->reasoning =
                    std::make_unique<tools::ReasoningParser>(thinking->format, thinking->start);
            }
            results_.push_back(ChoiceResult{.index = index});
        }
    }
    return std::nullopt;
}

int ChoiceRunner::num_samples() const { return std::max(prepared_.request.n, prepared_.request.best_of); }

// The alternatives per prompt position the engine reports: for prompt_logprobs, and for echo with logprobs (OpenAI's
// echoed prompt tokens come with their logprobs); each view keeps its own count of them. Every choice asks, not just
// the first of its prompt: such a request takes no prefix-cache hits, so each computes its prompt anyway.
int ChoiceRunner::num_prompt_logprobs() const {
    const CompletionRequest& request = prepared_.request;
    const int for_echo = request.echo && request.logprobs ? request.top_logprobs : -1;
    return std::max(request.prompt_logprobs.value_or(-1), for_echo);
}

bool ChoiceRunner::done() const {
    return std::all_of(choices_.begin(), choices_.end(), [](const auto& choice) { return choice->done; });
}

void ChoiceRunner::abort_all() {
    for (auto& choice : choices_) {
        if (!choice->done) context_.engine.abort(choice->engine_id);
        choice->done = true;
    }
}

std::optional<ChoiceDelta> ChoiceRunner::next(std::chrono::milliseconds timeout) {
    // Round robin: wait on one unfinished choice, then the next call starts after it.
    for (size_t tried = 0; tried < choices_.size(); ++tried) {
        Choice& choice = *choices_[cursor_];
        cursor_ = (cursor_ + 1) % choices_.size();
        if (choice.done) continue;
        std::optional<engine::RequestOutput> output = choice.stream->next(timeout);
        if (output) return take(choice, std::move(*output));
        if (choice.stream->closed()) {  // refused by the engine after submit
            choice.done = true;
            failure_ = status_outcome(choice.stream->error());
            abort_all();
        }
        return std::nullopt;
    }
    return std::nullopt;
}

std::optional<ChoiceDelta> ChoiceRunner::next_ready() {
    for (size_t tried = 0; tried < choices_.size() && !done(); ++tried) {
        if (std::optional<ChoiceDelta> delta = next(std::chrono::milliseconds(0))) return delta;
    }
    return std::nullopt;
}

// Each token as its piece, leading space included (decode() would drop it from a lone first piece), so that the
// tokens of a choice spell its text.
TokenLogprob ChoiceRunner::to_logprob(int32_t token, const engine::TokenLogprobs& logprobs) const {
    TokenLogprob item{context_.tokenizer.token_to_piece(token), logprobs.logprob, {}};
    const size_t num_top = std::min(logprobs.top.size(), static_cast<size_t>(prepared_.request.top_logprobs));
    for (size_t idx = 0; idx < num_top; ++idx) {
        item.top.emplace_back(context_.tokenizer.token_to_piece(logprobs.top[idx].first), logprobs.top[idx].second);
    }
    return item;
}

// `positions[i]` is prompt token i + 1's. prompt_logprobs keeps vLLM's form (the token, then the alternatives it
// does not already list); echo with logprobs puts the prompt's tokens ahead of the choice's own.
void ChoiceRunner::take_prompt_logprobs(const Choice& choice, const std::vector<engine::TokenLogprobs>& positions,
                                        ChoiceDelta& delta) {
    const CompletionRequest& request = prepared_.request;
    const std::vector<int32_t>& prompt = prepared_.prompt_tokens[choice.prompt_idx];
    TERN_CHECK(positions.size() + 1 == prompt.size()) << "prompt log-probabilities do not match the prompt";
    if (request.prompt_logprobs) {
        const Tokenizer& tokenizer = context_.tokenizer;
        std::vector<PositionLogprobs> ranked;
        for (size_t idx = 0; idx < positions.size(); ++idx) {
            const int32_t token = prompt[idx + 1];
            const engine::TokenLogprobs& at = positions[idx];
            PositionLogprobs position{{token, tokenizer.token_to_piece(token), at.logprob, at.rank}};
            const size_t num_top = std::min(at.top.size(), static_cast<size_t>(*request.prompt_logprobs));
            for (size_t rank = 0; rank < num_top; ++rank) {
                const auto& [id, logprob] = at.top[rank];
                if (id == token) continue;
                position.push_back({id, tokenizer.token_to_piece(id), logprob, static_cast<int64_t>(rank) + 1});
            }
            ranked.push_back(std::move(position));
        }
        results_[static_cast<size_t>(choice.index)].prompt_logprobs = std::move(ranked);
    }
    if (request.echo && request.logprobs) {
        std::vector<TokenLogprob> echoed{{context_.tokenizer.token_to_piece(prompt.front()), std::nullopt, {}}};
        for (size_t idx = 0; idx < positions.size(); ++idx) {
            echoed.push_back(to_logprob(prompt[idx + 1], positions[idx]));
        }
        delta.logprobs.insert(delta.logprobs.begin(), echoed.begin(), echoed.end());
    }
}

// A token that ended the choice as a stop token (EOS, stop_token_ids: the engine's only "stop") counts and has its
// logprob, but not its text, as vLLM (skip_special_tokens, include_stop_str_in_output off) and as EOS, a control
// token with no text, always had here.
void ChoiceRunner::take_token(Choice& choice, const engine::RequestOutput& output, ChoiceDelta& delta) {
    ChoiceResult& result = results_[static_cast<size_t>(choice.index)];
    const auto now = std::chrono::steady_clock::now();
    if (!first_token_time_) {
        first_token_time_ = now;
    } else {
        token_gaps_ms_.push_back(std::chrono::duration<double, std::milli>(now - last_token_time_).count());
    }
    last_token_time_ = now;
    ++result.completion_tokens;
    if (output.finish_reason != engine::FinishReason::kStop) {
        trace::Span span("detokenize", "server");
        delta.text = choice.text.push(*output.token);
    }
    if (!output.logprobs) return;
    choice.cumulative_logprob += output.logprobs->logprob;
    if (prepared_.request.logprobs) delta.logprobs.push_back(to_logprob(*output.token, *output.logprobs));
}

std::optional<ChoiceDelta> ChoiceRunner::take(Choice& choice, engine::RequestOutput output) {
    if (output.error) {  // the request's grammar overloaded the parser: a 400 naming the field, not the text
        choice.done = true;
        const std::string param = prepared_.request.constraint ? prepared_.request.constraint->field : "tool_choice";
        failure_ = error_outcome(400, "'" + param + "': " + *output.error, param);
        abort_all();
        return std::nullopt;
    }
    ChoiceDelta delta{.index = choice.index, .first = choice.first};
    choice.first = false;
    ChoiceResult& result = results_[static_cast<size_t>(choice.index)];
    if (output.token) take_token(choice, output, delta);
    if (output.prompt_logprobs) take_prompt_logprobs(choice, *output.prompt_logprobs, delta);
    if (output.timings) choice.num_cached_prompt_tokens = output.timings->num_cached_prompt_tokens;
    if (choice.text.stopped() && !output.finish_reason) {
        context_.engine.abort(choice.engine_id);  // a stop string matched: the engine's work is no longer wanted
        output.finish_reason = engine::FinishReason::kStop;
    }
    if (output.finish_reason) {
        choice.done = true;
        delta.text += choice.text.finish();
        delta.finish_reason = *output.finish_reason == engine::FinishReason::kLength ? "length" : "stop";
        result.finish_reason = *delta.finish_reason;
    }
    // echo: the prompt's text leads the choice's first delta, whole or streamed.
    if (delta.first && !prepared_.echo_texts.empty()) delta.text.insert(0, prepared_.echo_texts[choice.prompt_idx]);
    if (choice.reasoning) take_reasoning(choice, delta);
    if (choice.tool_parser) take_tool_calls(choice, delta);
    result.text += delta.text;
    result.reasoning += delta.reasoning;
    result.logprobs.insert(result.logprobs.end(), delta.logprobs.begin(), delta.logprobs.end());
    return delta;
}

// The thinking is taken out of the text, which keeps the answer (what tool calls are parsed from).
void ChoiceRunner::take_reasoning(Choice& choice, ChoiceDelta& delta) {
    tools::ReasoningParser::Split split = choice.reasoning->push(delta.text);
    if (delta.finish_reason) {
        tools::ReasoningParser::Split rest = choice.reasoning->finish();
        split.reasoning += rest.reasoning;
        split.content += rest.content;
    }
    delta.reasoning = std::move(split.reasoning);
    delta.text = std::move(split.content);
}

// The text becomes content and tool-call deltas; a choice that called tools and ended on its own finishes with
// "tool_calls" (one cut off by max_tokens stays "length", as OpenAI's).
void ChoiceRunner::take_tool_calls(Choice& choice, ChoiceDelta& delta) {
    tools::ParsedDelta parsed = choice.tool_parser->push(delta.text);
    if (delta.finish_reason) {
        tools::ParsedDelta rest = choice.tool_parser->finish();
        parsed.content += rest.content;
        parsed.calls.insert(parsed.calls.end(), rest.calls.begin(), rest.calls.end());
    }
    delta.text = std::move(parsed.content);
    delta.tool_calls = std::move(parsed.calls);
    if (!delta.finish_reason) return;
    ChoiceResult& result = results_[static_cast<size_t>(choice.index)];
    result.tool_calls = choice.tool_parser->calls();
    if (!result.tool_calls.empty() && *delta.finish_reason == "stop") {
        delta.finish_reason = "tool_calls";
        result.finish_reason = "tool_calls";
    }
}

std::vector<ChoiceResult> ChoiceRunner::returned_results() const {
    const int per_prompt = num_samples();
    const int num_returned = prepared_.request.n;
    if (per_prompt == num_returned) return results_;
    std::vector<ChoiceResult> returned;
    for (size_t first = 0; first + static_cast<size_t>(per_prompt) <= choices_.size(); first += per_prompt) {
        std::vector<size_t> order(static_cast<size_t>(per_prompt));
        std::iota(order.begin(), order.end(), first);
        std::stable_sort(order.begin(), order.end(), [this](size_t left, size_t right) {
            return choices_[left]->cumulative_logprob > choices_[right]->cumulative_logprob;
        });
        for (int rank = 0; rank < num_returned; ++rank) {
            returned.push_back(results_[order[static_cast<size_t>(rank)]]);
            returned.back().index = static_cast<int>(returned.size()) - 1;
        }
    }
    return returned;
}

// Every generated token counts, best_of's discarded choices included, as OpenAI bills them.
api::Usage ChoiceRunner::usage() const {
    api::Usage usage;
    for (const auto& ids : prepared_.prompt_tokens) usage.prompt_tokens += static_cast<int64_t>(ids.size());
    for (const ChoiceResult& result : results_) usage.completion_tokens += result.completion_tokens;
    usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    // OpenAI's prompt_tokens_details.cached_tokens. prompt_tokens counts each prompt once, whatever n, so the cached
    // part is counted once per prompt too: its first choice's (a sibling may reuse blocks the first one computed, but
    // that prompt is not counted again).
    usage.cached_tokens = 0;
    const size_t per_prompt = static_cast<size_t>(num_samples());
    for (size_t idx = 0; idx < choices_.size(); idx += per_prompt) {
        *usage.cached_tokens += choices_[idx]->num_cached_prompt_tokens;
    }
    return usage;
}

}  // namespace tern::server

#include "server/completion_handler.h"

#include <algorithm>

#include <fmt/format.h>

#include <atomic>
#include <memory>
#include <optional>

#include "server/choice_runner.h"
#include "server/infill.h"
#include "server/structured_output.h"

namespace tern::server {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
    return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

std::string make_id(api::Endpoint endpoint) {
    static std::atomic<uint64_t> counter{0};
    const uint64_t now = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    return fmt::format("{}-{:x}{:04x}", endpoint == api::Endpoint::kChatCompletions ? "chatcmpl" : "cmpl",
                       now & 0xffffffffffffull, counter.fetch_add(1) & 0xffff);
}

Result<std::vector<int32_t>> tokenize_prompt(const ServingContext& context, const PromptInput& prompt) {
    if (prompt.is_tokens) {
        for (int32_t id : prompt.token_ids) {
            if (id >= context.tokenizer.vocab_size()) {
                return invalid_argument(fmt::format("prompt token id {} is outside the vocabulary [0, {})", id,
                                                    context.tokenizer.vocab_size()));
            }
        }
        return prompt.token_ids;
    }
    std::vector<int32_t> ids = context.tokenizer.encode(prompt.text, /*add_special=*/true, /*parse_special=*/false);
    if (ids.empty()) return invalid_argument("the prompt is empty");
    return ids;
}

// The chat template renders special tokens as text (BOS among them), so they are parsed, and BOS is added only when
// the model wants one and the template did not write it.
// With a reasoning model, the prompt's end tells whether the output begins inside its thinking.
Result<std::vector<int32_t>> tokenize_chat(const ServingContext& context, const CompletionRequest& request,
                                           PreparedRequest& prepared) {
    const nlohmann::ordered_json tools = request.tools ? request.tools->as_sent : nlohmann::ordered_json();
    TERN_ASSIGN_OR_RETURN(std::string text, context.render_chat(request.messages, request.chat_template_kwargs, tools));
    if (context.reasoning) {
        prepared.thinking = ThinkingFirst{*context.reasoning, tools::reasoning_start(text, *context.reasoning)};
    }
    std::vector<int32_t> ids = context.tokenizer.encode(text, /*add_special=*/false, /*parse_special=*/true);
    const int32_t bos = context.tokenizer.bos_id();
    if (context.tokenizer.add_bos() && bos >= 0 && (ids.empty() || ids.front() != bos)) ids.insert(ids.begin(), bos);
    if (ids.empty()) return invalid_argument("the rendered chat is empty");
    return ids;
}

// OpenAI's `suffix`: the prompt is the text before the gap and the suffix the text after it, laid out with the
// model's fill-in-the-middle tokens. Neither part gets BOS of its own: the layout starts with it.
std::variant<std::vector<int32_t>, Outcome> tokenize_infill(const ServingContext& context, const PromptInput& prompt,
                                                           const std::string& suffix) {
    const Tokenizer& tokenizer = context.tokenizer;
    const std::optional<FimTokens> fim = fim_tokens(tokenizer);
    if (!fim) {
        return error_outcome(400, "'suffix' needs a model with fill-in-the-middle tokens (<PRE>, <SUF>, <MID> or "
                                  "the like); this model's vocabulary has none", "suffix");
    }
    std::vector<int32_t> prefix = prompt.token_ids;
    if (!prompt.is_tokens) prefix = tokenizer.encode(prompt.text, /*add_special=*/false, /*parse_special=*/false);
    const std::vector<int32_t> suffix_ids = tokenizer.encode(suffix, /*add_special=*/false, /*parse_special=*/false);
    return infill_prompt(*fim, tokenizer.add_bos() ? tokenizer.bos_id() : -1, prefix, suffix_ids);
}

// Token ids given in logit_bias and stop_token_ids must exist in this model's vocabulary.
std::optional<Outcome> check_token_fields(const Tokenizer& tokenizer, const CompletionRequest& request) {
    const int32_t vocab_size = tokenizer.vocab_size();
    for (const auto& [id, bias] : request.sampling.logit_bias) {
        if (id >= vocab_size) {
            return error_outcome(400, fmt::format("'logit_bias' names token id {}, outside the vocabulary [0, {})", id,
                                                  vocab_size), "logit_bias");
        }
    }
    for (int32_t id : request.stop_token_ids) {
        if (id >= vocab_size) {
            return error_outcome(400, fmt::format("'stop_token_ids' holds token id {}, outside the vocabulary "
                                                  "[0, {})", id, vocab_size), "stop_token_ids");
        }
    }
    return std::nullopt;
}

// Fills prepared.prompt_tokens (and echo_texts with `echo`); on failure the 400 to send.
std::optional<Outcome> tokenize_request(const ServingContext& context, const CompletionRequest& request,
                                        PreparedRequest& prepared) {
    const char* prompt_param = request.endpoint == api::Endpoint::kChatCompletions ? "messages" : "prompt";
    if (request.endpoint == api::Endpoint::kChatCompletions) {
        auto ids = tokenize_chat(context, request, prepared);
        if (!ids.is_ok()) return error_outcome(400, ids.status().message(), prompt_param);
        prepared.prompt_tokens.push_back(std::move(ids.value()));
    }
    for (const PromptInput& prompt : request.prompts) {
        if (request.suffix) {
            auto ids = tokenize_infill(context, prompt, *request.suffix);
            if (auto* refused = std::get_if<Outcome>(&ids)) return std::move(*refused);
            prepared.prompt_tokens.push_back(std::move(std::get<std::vector<int32_t>>(ids)));
        } else {
            auto ids = tokenize_prompt(context, prompt);
            if (!ids.is_ok()) return error_outcome(400, ids.status().message(), prompt_param);
            prepared.prompt_tokens.push_back(std::move(ids.value()));
        }
        // vLLM's echo: a text prompt as given, token ids as their text.
        if (request.echo) {
            prepared.echo_texts.push_back(prompt.is_tokens ? context.tokenizer.decode(prompt.token_ids) : prompt.text);
        }
    }
    return std::nullopt;
}

// Sets prepared.max_tokens from the request and the room the longest prompt leaves; on failure the 400 to send.
std::optional<Outcome> limit_tokens(const ServingContext& context, const CompletionRequest& request,
                                    PreparedRequest& prepared) {
    const char* prompt_param = request.endpoint == api::Endpoint::kChatCompletions ? "messages" : "prompt";
    int64_t longest = 0;
    for (const auto& ids : prepared.prompt_tokens) longest = std::max<int64_t>(longest, static_cast<int64_t>(ids.size()));
    const int64_t room = context.max_model_len - longest;
    if (room < 1) {
        return error_outcome(400, fmt::format("the prompt has {} tokens; this model's context is {} tokens, leaving "
                                              "no room to generate; shorten the prompt", longest, context.max_model_len),
                             prompt_param);
    }
    const int64_t max_tokens = request.max_tokens.value_or(room);  // vLLM's default: the rest of the context
    if (max_tokens > room) {
        return error_outcome(400, fmt::format("max_tokens {} is too large: the prompt has {} tokens and the context {}, "
                                              "so at most {} can be generated", max_tokens, longest,
                                              context.max_model_len, room), "max_tokens");
    }
    if (request.sampling.min_tokens > max_tokens) {  // an explicit max_tokens was checked with the body
        return error_outcome(400, fmt::format("min_tokens {} is more than the {} tokens this prompt leaves room for",
                                              request.sampling.min_tokens, max_tokens), "min_tokens");
    }
    prepared.max_tokens = static_cast<int>(max_tokens);
    return std::nullopt;
}

}  // namespace

Outcome error_outcome(int status, const std::string& message, const std::string& param) {
    Outcome outcome;
    outcome.status = status;
    outcome.body = error_body(status, message, param);
    outcome.finish_reason = "error";
    return outcome;
}

Outcome status_outcome(const Status& status, const std::string& param) {
    switch (status.code()) {
        case StatusCode::kResourceExhausted: return error_outcome(429, status.message(), param);
        case StatusCode::kUnavailable: return error_outcome(503, status.message(), param);
        case StatusCode::kInternal: return error_outcome(500, status.message(), param);
        default: return error_outcome(400, status.message(), param);
    }
}

// The request's structured-output grammar, compiled (or found in the cache); a 400 naming the field otherwise.
std::optional<Outcome> compile_request_constraint(const ServingContext& context, const CompletionRequest& request,
                                                  PreparedRequest& prepared) {
    if (!request.constraint) return std::nullopt;
    if (context.grammars == nullptr) {
        return error_outcome(400, "structured output is not available on this server", request.constraint->field);
    }
    auto compiled = compile_constraint(*context.grammars, *request.constraint, prepared.thinking);
    if (auto* error = std::get_if<RequestError>(&compiled)) return error_outcome(400, error->message, error->param);
    prepared.grammar = std::get<std::shared_ptr<const grammar::CompiledGrammar>>(std::move(compiled));
    return std::nullopt;
}

// The grammar that forces a tool call (tool_choice "required" or a function), and how the text is parsed for calls.
std::optional<Outcome> prepare_tools(const ServingContext& context, const CompletionRequest& request,
                                     PreparedRequest& prepared) {
    if (!request.tools) return std::nullopt;
    prepared.tool_parsing = plan_tool_parsing(context.tool_format, context.tokenizer, request.tools);
    const bool forced = request.tools->choice == api::ToolChoice::kRequired ||
                        request.tools->choice == api::ToolChoice::kFunction;
    if (!forced) return std::nullopt;
    if (context.grammars == nullptr) return error_outcome(400, "forced tool calls are not available on this server",
                                                          "tool_choice");
    auto compiled = compile_tool_grammar(*context.grammars, context.tool_format, *request.tools, prepared.thinking);
    if (auto* error = std::get_if<RequestError>(&compiled)) return error_outcome(400, error->message, error->param);
    prepared.grammar = std::get<std::shared_ptr<const grammar::CompiledGrammar>>(std::move(compiled));
    return std::nullopt;
}

std::variant<PreparedRequest, Outcome> prepare_request(const ServingContext& context, CompletionRequest request) {
    PreparedRequest prepared;
    if (!request.model.empty() && request.model != context.model_name) {
        return error_outcome(404, fmt::format("the model '{}' does not exist; this server serves '{}'", request.model,
                                              context.model_name), "model");
    }
    if (auto refused = check_priority(request, context.engine.config().scheduling_policy)) {
        return error_outcome(400, refused->message, refused->param);
    }
    if (auto refused = check_token_fields(context.tokenizer, request)) return std::move(*refused);
    if (auto refused = tokenize_request(context, request, prepared)) return std::move(*refused);
    if (auto refused = compile_request_constraint(context, request, prepared)) return std::move(*refused);
    if (auto refused = prepare_tools(context, request, prepared)) return std::move(*refused);
    request.sampling.seed = choose_seed(request.seed);
    if (auto refused = limit_tokens(context, request, prepared)) return std::move(*refused);
    prepared.meta = ResponseMeta{request.endpoint, make_id(request.endpoint),
                                 std::chrono::duration_cast<std::chrono::seconds>(
                                     std::chrono::system_clock::now().time_since_epoch()).count(),
                                 context.model_name, request.logprobs};
    prepared.request = std::move(request);
    return prepared;
}

namespace {

Outcome finish_outcome(const ChoiceRunner& runner, const ResponseMeta& meta, Clock::time_point start) {
    Outcome outcome;
    outcome.id = meta.id;
    const api::Usage usage = runner.usage();
    outcome.prompt_tokens = usage.prompt_tokens;
    outcome.completion_tokens = usage.completion_tokens;
    outcome.total_ms = ms_since(start);
    if (auto first = runner.first_token_time()) {
        outcome.ttft_ms = std::chrono::duration<double, std::milli>(*first - start).count();
    }
    if (!runner.results().empty()) outcome.finish_reason = runner.results().front().finish_reason;
    std::vector<double> gaps = runner.token_gaps_ms();
    if (!gaps.empty()) {
        std::sort(gaps.begin(), gaps.end());
        const auto at = [&](double share) {
            return gaps[static_cast<size_t>(share * static_cast<double>(gaps.size() - 1))];
        };
        outcome.itl_p50_ms = at(0.5);
        outcome.itl_p99_ms = at(0.99);
        outcome.itl_max_ms = gaps.back();
    }
    return outcome;
}

}  // namespace

ResponseProducer::ResponseProducer(ChoiceRunner& runner, const PreparedRequest& prepared, Clock::time_point start)
    : runner_(runner), prepared_(prepared), start_(start) {}

bool ResponseProducer::poll(std::chrono::milliseconds wait, std::vector<std::string>& events) {
    if (finished_) return true;
    std::optional<ChoiceDelta> delta = runner_.next(wait);
    while (delta) {
        take(*delta, events);
        delta = runner_.next_ready();
    }
    if (runner_.done()) finish(events);
    return finished_;
}

// Content first, then each tool-call delta in a chunk of its own (as OpenAI and vLLM stream them); the finish reason
// rides on the last chunk.
void ResponseProducer::take(const ChoiceDelta& delta, std::vector<std::string>& events) {
    if (!prepared_.request.stream) return;  // the runner keeps the whole text
    const auto add = [&](const nlohmann::json& chunk) {
        events.push_back(chunk.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
    };
    const bool calls = !delta.tool_calls.empty();
    if (!delta.text.empty() || !delta.reasoning.empty() || !delta.logprobs.empty() || delta.first ||
        (delta.finish_reason && !calls)) {
        add(stream_chunk(prepared_.meta, delta.index, delta.text, delta.logprobs,
                         calls ? std::nullopt : delta.finish_reason, delta.first, {}, delta.reasoning));
    }
    for (size_t call_idx = 0; call_idx < delta.tool_calls.size(); ++call_idx) {
        const bool last = call_idx + 1 == delta.tool_calls.size();
        add(stream_chunk(prepared_.meta, delta.index, "", {}, last ? delta.finish_reason : std::nullopt, false,
                         {delta.tool_calls[call_idx]}));
    }
}

void ResponseProducer::finish(std::vector<std::string>& events) {
    finished_ = true;
    if (auto failure = runner_.failure()) {
        outcome_ = *failure;
        if (prepared_.request.stream) {  // the 200 and earlier chunks are sent: the error is an event
            events.push_back(outcome_.body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
            events.push_back("[DONE]");
        }
        return;
    }
    outcome_ = finish_outcome(runner_, prepared_.meta, start_);
    if (!prepared_.request.stream) {
        outcome_.body = completion_response(prepared_.meta, runner_.returned_results(), runner_.usage());
        return;
    }
    if (prepared_.request.include_usage) events.push_back(usage_chunk(prepared_.meta, runner_.usage()).dump());
    events.push_back("[DONE]");
}

void ResponseProducer::client_gone() {
    if (finished_) return;
    runner_.abort_all();  // frees the KV at once
    finished_ = true;
    outcome_ = finish_outcome(runner_, prepared_.meta, start_);
    outcome_.status = 499;  // nginx's "client closed request", for the log only
    outcome_.finish_reason = "abort";
}

Outcome run_request(ChoiceRunner& runner, const PreparedRequest& prepared, const EventWriter* writer,
                    std::chrono::steady_clock::time_point start) {
    ResponseProducer producer(runner, prepared, start);
    std::vector<std::string> events;
    while (!producer.poll(std::chrono::milliseconds(20), events)) {
        if (writer == nullptr) continue;
        bool alive = events.empty() ? (*writer)("") : true;  // an empty event is a liveness probe
        for (const std::string& event : events) alive = alive && (*writer)(event);
        events.clear();
        if (!alive) producer.client_gone();
    }
    if (writer != nullptr) {
        for (const std::string& event : events) (*writer)(event);
    }
    return producer.outcome();
}

}  // namespace tern::server

#include "api/request_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <functional>
#include <limits>

#include "api/output_constraint.h"
#include "api/tools.h"

namespace tern::api {
namespace {

using nlohmann::json;

// Which endpoints take a field.
enum class On { kBoth, kCompletions, kChat };

// Checks a present, non-null value of field `name`; nullopt when it is fine.
using ValueCheck = std::function<std::optional<FieldError>(const std::string& name, const json& value)>;

struct FieldRule {
    std::string_view name;
    On on;
    ValueCheck check;
};

FieldError error_at(const std::string& name, std::string message) { return FieldError{std::move(message), name}; }

ValueCheck string_value() {
    return [](const std::string& name, const json& value) -> std::optional<FieldError> {
        if (!value.is_string()) return error_at(name, fmt::format("'{}' must be a string", name));
        return std::nullopt;
    };
}

ValueCheck boolean_value() {
    return [](const std::string& name, const json& value) -> std::optional<FieldError> {
        if (!value.is_boolean()) return error_at(name, fmt::format("'{}' must be true or false", name));
        return std::nullopt;
    };
}

ValueCheck object_value() {
    return [](const std::string& name, const json& value) -> std::optional<FieldError> {
        if (!value.is_object()) return error_at(name, fmt::format("'{}' must be an object", name));
        return std::nullopt;
    };
}

// A number in [low, high], or in (low, high] when `low_open`.
ValueCheck number_in(double low, double high, bool low_open = false) {
    return [=](const std::string& name, const json& value) -> std::optional<FieldError> {
        if (!value.is_number()) return error_at(name, fmt::format("'{}' must be a number", name));
        const double number = value.get<double>();
        if (number < low || number > high || (low_open && number == low)) {
            return error_at(name, fmt::format("'{}' must be in {}{}, {}], got {}", name, low_open ? "(" : "[", low,
                                              high, number));
        }
        return std::nullopt;
    };
}

// An integer in [low, high]; a number above INT64_MAX (nlohmann keeps it unsigned) is out of any such range.
ValueCheck integer_in(int64_t low, int64_t high) {
    return [=](const std::string& name, const json& value) -> std::optional<FieldError> {
        if (!value.is_number_integer()) return error_at(name, fmt::format("'{}' must be an integer", name));
        const bool too_big = value.is_number_unsigned() &&
                             value.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
        if (too_big || value.get<int64_t>() < low || value.get<int64_t>() > high) {
            return error_at(name, fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, value.dump()));
        }
        return std::nullopt;
    };
}

// A field tern knows but cannot honour yet: refused, so that a client does not believe it took effect.
ValueCheck unsupported(std::string_view why) {
    return [why](const std::string& name, const json&) -> std::optional<FieldError> {
        return error_at(name, fmt::format("'{}' is not supported by this server: {}", name, why));
    };
}

std::optional<FieldError> check_prompt(const std::string&, const json& value) {
    std::vector<PromptInput> prompts;
    return decode_prompts(value, &prompts);
}

std::optional<FieldError> check_messages(const std::string&, const json& value) {
    std::vector<ChatMessage> messages;
    return decode_messages(value, &messages);
}

std::optional<FieldError> check_stop(const std::string& name, const json& value) {
    if (value.is_string()) return std::nullopt;
    if (!value.is_array() || value.size() > kMaxStopStrings) {
        return error_at(name, fmt::format("'stop' must be a string or a list of at most {} strings", kMaxStopStrings));
    }
    for (const json& item : value) {
        if (!item.is_string()) return error_at(name, "'stop' must hold strings only");
    }
    return std::nullopt;
}

// Only include_usage is read; other keys (vLLM's continuous_usage_stats, OpenAI's include_obfuscation) are ignored.
std::optional<FieldError> check_stream_options(const std::string& name, const json& value) {
    if (!value.is_object()) return error_at(name, "'stream_options' must be an object");
    const auto usage = value.find("include_usage");
    if (usage != value.end() && !usage->is_null() && !usage->is_boolean()) {
        return error_at(name, "'include_usage' must be true or false");
    }
    return std::nullopt;
}

std::optional<FieldError> check_logit_bias(const std::string&, const json& value) {
    std::vector<std::pair<int32_t, float>> biases;
    return decode_logit_bias(value, &biases);
}

std::optional<FieldError> check_stop_token_ids(const std::string&, const json& value) {
    std::vector<int32_t> ids;
    return decode_stop_token_ids(value, &ids);
}

int json_depth(const json& value) {
    int deepest = 0;
    if (value.is_structured()) {
        for (const json& item : value) deepest = std::max(deepest, json_depth(item));
        return deepest + 1;
    }
    return 0;
}

// vLLM's chat_template_kwargs: extra variables for the chat template. `messages` would replace the conversation the
// server checked, so it is refused; add_generation_prompt also steers the plain fallback format, so it must be a
// boolean there.
std::optional<FieldError> check_chat_template_kwargs(const std::string& name, const json& value) {
    if (!value.is_object()) return error_at(name, "'chat_template_kwargs' must be an object of template variables");
    if (value.contains("messages")) {
        return error_at(name, "'chat_template_kwargs' cannot set 'messages': send the conversation in 'messages'");
    }
    const auto generation_prompt = value.find("add_generation_prompt");
    if (generation_prompt != value.end() && !generation_prompt->is_boolean()) {
        return error_at(name, "'chat_template_kwargs.add_generation_prompt' must be true or false");
    }
    // The object itself is one level: a kwarg may hold containers nested kMaxTemplateKwargsDepth - 1 deep.
    if (json_depth(value) > kMaxTemplateKwargsDepth) {
        return error_at(name, fmt::format("'chat_template_kwargs' nests deeper than {} levels", kMaxTemplateKwargsDepth));
    }
    return std::nullopt;
}

// Every field tern knows, by endpoint. Supporting a new field is one row here (plus reading it in the decoders):
// a field with no row is refused as unknown.
const std::vector<FieldRule>& field_rules() {
    static const std::vector<FieldRule> kRules = {
        // Decoded and honoured.
        {"model", On::kBoth, string_value()},
        {"prompt", On::kCompletions, check_prompt},
        {"messages", On::kChat, check_messages},
        {"max_tokens", On::kBoth, integer_in(1, std::numeric_limits<int32_t>::max())},
        {"max_completion_tokens", On::kChat, integer_in(1, std::numeric_limits<int32_t>::max())},
        {"stream", On::kBoth, boolean_value()},
        {"stream_options", On::kBoth, check_stream_options},
        {"temperature", On::kBoth, number_in(0.0, 2.0)},
        {"top_p", On::kBoth, number_in(0.0, 1.0, /*low_open=*/true)},
        {"top_k", On::kBoth, integer_in(-1, 1 << 30)},  // -1 (vLLM) or 0: off
        {"min_p", On::kBoth, number_in(0.0, 1.0)},
        {"presence_penalty", On::kBoth, number_in(-2.0, 2.0)},
        {"frequency_penalty", On::kBoth, number_in(-2.0, 2.0)},
        {"repetition_penalty", On::kBoth, number_in(1e-3, 100.0)},
        // Any int64, as OpenAI and vLLM take it; the sampler uses its bits.
        {"seed", On::kBoth, integer_in(std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max())},
        {"stop", On::kBoth, check_stop},
        {"n", On::kBoth, integer_in(1, kMaxChoices)},
        {"logprobs", On::kCompletions, integer_in(0, kMaxTopLogprobs)},  // completions: how many alternatives
        {"logprobs", On::kChat, boolean_value()},
        {"top_logprobs", On::kChat, integer_in(0, kMaxTopLogprobs)},
        // A vLLM extension; the server refuses a non-zero one unless started with --scheduling-policy priority.
        {"priority", On::kBoth, integer_in(std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max())},
        {"ignore_eos", On::kBoth, boolean_value()},
        {"logit_bias", On::kBoth, check_logit_bias},
        {"min_tokens", On::kBoth, integer_in(0, std::numeric_limits<int32_t>::max())},  // vLLM
        {"stop_token_ids", On::kBoth, check_stop_token_ids},                              // vLLM
        {"echo", On::kCompletions, boolean_value()},
        {"best_of", On::kCompletions, integer_in(1, kMaxChoices)},
        {"suffix", On::kCompletions, string_value()},  // fill-in-the-middle, for models with FIM tokens
        {"chat_template_kwargs", On::kChat, check_chat_template_kwargs},  // vLLM
        // vLLM's: prefix-cache hits only among requests with the same salt (tenants that must not share them).
        {"cache_salt", On::kBoth, string_value()},
        // vLLM's: the prompt tokens' log-probabilities, with this many alternatives each (vLLM's -1, the whole
        // vocabulary, is refused: it answers megabytes per prompt token).
        {"prompt_logprobs", On::kBoth, integer_in(0, kMaxTopLogprobs)},
        // Accepted and ignored (listed in the README too): bookkeeping for OpenAI's platform that does not change
        // the output, which clients and SDK wrappers send on every request.
        {"user", On::kBoth, string_value()},
        {"safety_identifier", On::kBoth, string_value()},  // OpenAI's successor of `user`
        {"metadata", On::kBoth, object_value()},
        {"store", On::kBoth, boolean_value()},
        {"service_tier", On::kBoth, string_value()},
        {"prompt_cache_key", On::kBoth, string_value()},  // a cache-routing hint; tern's prefix cache needs none
        // Tool calling (api/tools.h).
        {"tools", On::kChat, check_tools_field},
        {"tool_choice", On::kChat, check_tool_choice_field},
        {"parallel_tool_calls", On::kChat, boolean_value()},
        // Known, not supported: refused with the reason.
        {"functions", On::kChat, unsupported("OpenAI's deprecated function calling: send 'tools' instead")},
        {"function_call", On::kChat, unsupported("OpenAI's deprecated function calling: send 'tool_choice' instead")},
        // Structured output (api/output_constraint.h): OpenAI's, vLLM's and llama-server's spellings.
        {"response_format", On::kBoth, check_output_constraint_field},
        {"guided_json", On::kBoth, check_output_constraint_field},
        {"guided_regex", On::kBoth, check_output_constraint_field},
        {"guided_choice", On::kBoth, check_output_constraint_field},
        {"guided_grammar", On::kBoth, check_output_constraint_field},
        {"structured_outputs", On::kBoth, check_output_constraint_field},
        {"json_schema", On::kBoth, check_output_constraint_field},
        {"grammar", On::kBoth, check_output_constraint_field},
    };
    return kRules;
}

bool applies(On on, Endpoint endpoint) {
    return on == On::kBoth || (on == On::kCompletions) == (endpoint == Endpoint::kCompletions);
}

const FieldRule* find_rule(Endpoint endpoint, std::string_view name) {
    for (const FieldRule& rule : field_rules()) {
        if (rule.name == name && applies(rule.on, endpoint)) return &rule;
    }
    return nullptr;
}

// Fields whose values bound each other.
std::optional<FieldError> check_generation_counts(Endpoint endpoint, const json& body) {
    const std::optional<int64_t> max_tokens = max_tokens_of(endpoint, body);
    const std::optional<int64_t> min_tokens = field_value<int64_t>(body, "min_tokens");
    if (min_tokens && max_tokens && *min_tokens > *max_tokens) {
        return error_at("min_tokens", fmt::format("'min_tokens' ({}) must not exceed '{}' ({})", *min_tokens,
                                                  endpoint == Endpoint::kChatCompletions &&
                                                          find_field(body, "max_completion_tokens") != nullptr
                                                      ? "max_completion_tokens"
                                                      : "max_tokens",
                                                  *max_tokens));
    }
    const std::optional<int64_t> best_of = field_value<int64_t>(body, "best_of");
    if (!best_of) return std::nullopt;
    const int64_t num_choices = field_value<int64_t>(body, "n").value_or(1);
    if (*best_of < num_choices) {
        return error_at("best_of", fmt::format("'best_of' ({}) must be at least 'n' ({})", *best_of, num_choices));
    }
    // OpenAI's rule: the best choices are known only once all of them have finished.
    if (*best_of > 1 && field_value<bool>(body, "stream").value_or(false)) {
        return error_at("best_of", "'best_of' greater than 1 cannot be streamed: set 'stream' to false");
    }
    return std::nullopt;
}

std::optional<FieldError> check_cross_fields(Endpoint endpoint, const json& body) {
    const char* required = endpoint == Endpoint::kCompletions ? "prompt" : "messages";
    if (find_field(body, required) == nullptr) return error_at(required, fmt::format("'{}' is required", required));
    if (auto error = check_generation_counts(endpoint, body)) return error;
    std::optional<OutputConstraint> constraint;
    if (auto error = decode_output_constraint(body, &constraint)) return error;
    std::optional<ToolRequest> tools;
    if (auto error = decode_tool_request(body, constraint ? constraint->field : "", &tools)) return error;
    // As vLLM: a stream has no place for them (its chunks carry no prompt_logprobs field).
    if (find_field(body, "prompt_logprobs") != nullptr && field_value<bool>(body, "stream").value_or(false)) {
        return error_at("prompt_logprobs", "'prompt_logprobs' cannot be streamed: set 'stream' to false");
    }
    if (endpoint == Endpoint::kChatCompletions) {
        const json* top = find_field(body, "top_logprobs");
        const json* logprobs = find_field(body, "logprobs");
        if (top != nullptr && top->get<int64_t>() > 0 && (logprobs == nullptr || !logprobs->get<bool>())) {
            return error_at("top_logprobs", "'top_logprobs' needs 'logprobs': true");
        }
    }
    return std::nullopt;
}

// A list of token ids, each in [0, INT32_MAX]; false when it is not one.
bool decode_token_ids(const json& value, std::vector<int32_t>* ids) {
    if (!value.is_array() || value.empty()) return false;
    for (const json& item : value) {
        // An unsigned value above INT64_MAX reads as a negative int64: refused with the negatives.
        if (!item.is_number_integer() || item.get<int64_t>() < 0 ||
            item.get<int64_t>() > std::numeric_limits<int32_t>::max()) {
            return false;
        }
        ids->push_back(item.get<int32_t>());
    }
    return true;
}

std::optional<FieldError> decode_content(const json& content, size_t message_idx, std::string* text) {
    const FieldError shape{"'content' must be a string or a list of text parts", "messages"};
    if (content.is_string()) {
        *text = content.get<std::string>();
        return std::nullopt;
    }
    if (!content.is_array()) return shape;
    for (const json& part : content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) return shape;
        const std::string type = part["type"].get<std::string>();
        if (type != "text") {
            // Refused rather than dropped: an answer that never saw the image would look like an answer about it.
            std::string param = fmt::format("messages[{}].content", message_idx);
            return FieldError{fmt::format("'{}' holds a part of type '{}', but this model takes text only: send "
                                          "text parts only", param, type),
                              std::move(param)};
        }
        if (!part.contains("text") || !part["text"].is_string()) return shape;
        *text += part["text"].get<std::string>();
    }
    return std::nullopt;
}

}  // namespace

const json* find_field(const json& body, std::string_view name) {
    const auto found = body.find(std::string(name));
    return found == body.end() || found->is_null() ? nullptr : &*found;
}

std::optional<FieldError> check_request_body(Endpoint endpoint, const json& body) {
    if (!body.is_object()) return FieldError{"the request body must be a JSON object", ""};
    for (const auto& [name, value] : body.items()) {
        const FieldRule* rule = find_rule(endpoint, name);
        if (rule == nullptr) {
            return error_at(name, fmt::format("unknown field '{}': {} does not take it (tern refuses fields it does "
                                              "not support rather than ignore them)", name, endpoint_path(endpoint)));
        }
        if (value.is_null()) continue;
        if (auto error = rule->check(name, value)) return error;
    }
    return check_cross_fields(endpoint, body);
}

std::optional<FieldError> decode_prompts(const json& prompt, std::vector<PromptInput>* prompts) {
    const FieldError expected{
        "'prompt' must be a string, a list of strings, a list of token ids or a list of such lists", "prompt"};
    if (prompt.is_string()) {
        prompts->push_back(PromptInput{.text = prompt.get<std::string>()});
        return std::nullopt;
    }
    if (!prompt.is_array() || prompt.empty()) return expected;
    if (prompt[0].is_number()) {
        PromptInput tokens{.is_tokens = true};
        if (!decode_token_ids(prompt, &tokens.token_ids)) return expected;
        prompts->push_back(std::move(tokens));
        return std::nullopt;
    }
    for (const json& item : prompt) {
        PromptInput input;
        if (item.is_string()) {
            input.text = item.get<std::string>();
        } else if (decode_token_ids(item, &input.token_ids)) {
            input.is_tokens = true;
        } else {
            return expected;
        }
        prompts->push_back(std::move(input));
    }
    return std::nullopt;
}

std::optional<FieldError> decode_messages(const json& messages, std::vector<ChatMessage>* messages_out) {
    if (!messages.is_array() || messages.empty()) {
        return FieldError{"'messages' must be a non-empty list of {role, content} objects", "messages"};
    }
    static constexpr std::string_view kRoles[] = {"system", "developer", "user", "assistant", "tool"};
    for (size_t idx = 0; idx < messages.size(); ++idx) {
        const json& item = messages[idx];
        if (!item.is_object() || !item.contains("role") || !item["role"].is_string()) {
            return FieldError{"every message needs a string 'role'", "messages"};
        }
        ChatMessage message{.role = item["role"].get<std::string>()};
        if (std::find(std::begin(kRoles), std::end(kRoles), message.role) == std::end(kRoles)) {
            return FieldError{fmt::format("unknown message role '{}'", message.role), "messages"};
        }
        const json* content = find_field(item, "content");
        if (content != nullptr) {
            if (auto error = decode_content(*content, idx, &message.content)) return error;
        }
        if (auto error = decode_message_tool_fields(item, idx, &message)) return error;
        // A reasoning model's past thinking (vLLM's field), which templates such as Qwen3's place or drop.
        if (const json* reasoning = find_field(item, "reasoning_content")) {
            if (!reasoning->is_string()) {
                return FieldError{fmt::format("'messages[{}].reasoning_content' must be a string", idx),
                                  fmt::format("messages[{}].reasoning_content", idx)};
            }
            message.reasoning_content = reasoning->get<std::string>();
        }
        messages_out->push_back(std::move(message));
    }
    return std::nullopt;
}

namespace {

// A logit_bias token id: an integer, or (object form) its decimal text, in [0, INT32_MAX].
std::optional<int32_t> bias_token_id(const json& id) {
    int64_t value = -1;
    if (id.is_string()) {
        const std::string text = id.get<std::string>();
        const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (error != std::errc() || end != text.data() + text.size() || text.empty()) return std::nullopt;
    } else if (id.is_number_integer() && !(id.is_number_unsigned() && id.get<uint64_t>() > static_cast<uint64_t>(INT32_MAX))) {
        value = id.get<int64_t>();
    }
    if (value < 0 || value > std::numeric_limits<int32_t>::max()) return std::nullopt;
    return static_cast<int32_t>(value);
}

// A bias: a number in [-100, 100], or false for "never" (-inf), as llama-server reads it.
std::optional<float> bias_value(const json& bias) {
    if (bias.is_boolean()) {
        if (bias.get<bool>()) return std::nullopt;  // true has no meaning (llama-server skips it)
        return -std::numeric_limits<float>::infinity();
    }
    if (!bias.is_number()) return std::nullopt;
    const double value = bias.get<double>();
    if (!(value >= -kMaxLogitBias && value <= kMaxLogitBias)) return std::nullopt;
    return static_cast<float>(value);
}

}  // namespace

std::optional<FieldError> decode_logit_bias(const json& value, std::vector<std::pair<int32_t, float>>* biases) {
    const FieldError shape{"'logit_bias' must map token ids to biases: {\"token id\": bias} or [[token_id, bias], ...], "
                           "each id an integer >= 0 and each bias a number in [-100, 100] or false (never)",
                           "logit_bias"};
    const auto add = [&](const json& id, const json& bias) {
        const std::optional<int32_t> token = bias_token_id(id);
        const std::optional<float> amount = bias_value(bias);
        if (!token || !amount) return false;
        biases->emplace_back(*token, *amount);
        return true;
    };
    if (value.is_object()) {
        for (const auto& [id, bias] : value.items()) {
            if (!add(json(id), bias)) return shape;
        }
        return std::nullopt;
    }
    if (!value.is_array()) return shape;
    for (const json& pair : value) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !add(pair[0], pair[1])) {
            return shape;
        }
    }
    return std::nullopt;
}

std::optional<FieldError> decode_stop_token_ids(const json& value, std::vector<int32_t>* ids) {
    const FieldError shape{fmt::format("'stop_token_ids' must be a list of at most {} token ids (integers >= 0)",
                                       kMaxStopTokenIds),
                           "stop_token_ids"};
    if (!value.is_array() || value.size() > static_cast<size_t>(kMaxStopTokenIds)) return shape;
    if (value.empty()) return std::nullopt;
    return decode_token_ids(value, ids) ? std::nullopt : std::optional<FieldError>(shape);
}

std::optional<int64_t> max_tokens_of(Endpoint endpoint, const json& body) {
    const json* value = endpoint == Endpoint::kChatCompletions ? find_field(body, "max_completion_tokens") : nullptr;
    if (value == nullptr) value = find_field(body, "max_tokens");
    if (value == nullptr) return std::nullopt;
    return value->get<int64_t>();
}

}  // namespace tern::api

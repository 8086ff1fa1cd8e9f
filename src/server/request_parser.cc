#include "server/request_parser.h"

#include <fmt/format.h>

namespace tern::server {
namespace {

using nlohmann::json;

// Reads typed fields of one body; the first problem found is kept and later reads become no-ops.
class FieldReader {
public:
    explicit FieldReader(const json& body) : body_(body) {}

    bool ok() const { return !error_.has_value(); }
    RequestError error() const { return *error_; }
    void fail(std::string param, std::string message) {
        if (!error_) error_ = RequestError{std::move(message), std::move(param)};
    }
    // The field, or nullptr when absent or null.
    const json* find(const char* name) const {
        auto found = body_.find(name);
        return found == body_.end() || found->is_null() ? nullptr : &*found;
    }

    void number(const char* name, double low, double high, float* out) {
        const json* value = find(name);
        if (value == nullptr || !ok()) return;
        if (!value->is_number()) return fail(name, fmt::format("'{}' must be a number", name));
        const double number = value->get<double>();
        if (number < low || number > high) {
            return fail(name, fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, number));
        }
        *out = static_cast<float>(number);
    }

    template <typename Int>
    void integer(const char* name, int64_t low, int64_t high, Int* out) {
        const json* value = find(name);
        if (value == nullptr || !ok()) return;
        if (!value->is_number_integer()) return fail(name, fmt::format("'{}' must be an integer", name));
        const int64_t number = value->get<int64_t>();
        if (number < low || number > high) {
            return fail(name, fmt::format("'{}' must be in [{}, {}], got {}", name, low, high, number));
        }
        *out = static_cast<Int>(number);
    }

    void boolean(const char* name, bool* out) {
        const json* value = find(name);
        if (value == nullptr || !ok()) return;
        if (!value->is_boolean()) return fail(name, fmt::format("'{}' must be true or false", name));
        *out = value->get<bool>();
    }

    void string(const char* name, std::string* out) {
        const json* value = find(name);
        if (value == nullptr || !ok()) return;
        if (!value->is_string()) return fail(name, fmt::format("'{}' must be a string", name));
        *out = value->get<std::string>();
    }

private:
    const json& body_;
    std::optional<RequestError> error_;
};

void read_sampling(FieldReader& reader, SamplingParams& sampling) {
    reader.number("temperature", 0.0, 2.0, &sampling.temperature);
    reader.number("top_p", 1e-9, 1.0, &sampling.top_p);
    int64_t top_k = 0;
    reader.integer("top_k", -1, 1 << 30, &top_k);
    sampling.top_k = static_cast<int32_t>(top_k < 0 ? 0 : top_k);  // -1 is vLLM's "off"
    reader.number("min_p", 0.0, 1.0, &sampling.min_p);
    reader.number("presence_penalty", -2.0, 2.0, &sampling.presence_penalty);
    reader.number("frequency_penalty", -2.0, 2.0, &sampling.frequency_penalty);
    reader.number("repetition_penalty", 1e-3, 100.0, &sampling.repetition_penalty);
    int64_t seed = 0;
    if (reader.find("seed") != nullptr) {
        reader.integer("seed", INT64_MIN, INT64_MAX, &seed);
        sampling.seed = static_cast<uint64_t>(seed);
    }
}

void read_stop(FieldReader& reader, std::vector<std::string>& stop) {
    const json* value = reader.find("stop");
    if (value == nullptr) return;
    if (value->is_string()) {
        stop.push_back(value->get<std::string>());
        return;
    }
    if (!value->is_array() || value->size() > kMaxStopStrings) {
        return reader.fail("stop", fmt::format("'stop' must be a string or a list of at most {} strings",
                                               kMaxStopStrings));
    }
    for (const json& item : *value) {
        if (!item.is_string()) return reader.fail("stop", "'stop' must hold strings only");
        stop.push_back(item.get<std::string>());
    }
}

// A list of token ids, each a non-negative integer.
bool read_token_ids(const json& value, std::vector<int32_t>& ids) {
    for (const json& item : value) {
        if (!item.is_number_integer() || item.get<int64_t>() < 0 || item.get<int64_t>() > INT32_MAX) return false;
        ids.push_back(item.get<int32_t>());
    }
    return !ids.empty();
}

void read_prompts(FieldReader& reader, std::vector<PromptInput>& prompts) {
    const json* value = reader.find("prompt");
    const char* expected = "'prompt' must be a string, a list of strings, a list of token ids or a list of such lists";
    if (value == nullptr) return reader.fail("prompt", "'prompt' is required");
    if (value->is_string()) {
        prompts.push_back(PromptInput{.text = value->get<std::string>()});
        return;
    }
    if (!value->is_array() || value->empty()) return reader.fail("prompt", expected);
    if ((*value)[0].is_number()) {
        PromptInput prompt{.is_tokens = true};
        if (!read_token_ids(*value, prompt.token_ids)) return reader.fail("prompt", expected);
        prompts.push_back(std::move(prompt));
        return;
    }
    for (const json& item : *value) {
        PromptInput prompt;
        if (item.is_string()) {
            prompt.text = item.get<std::string>();
        } else if (item.is_array() && read_token_ids(item, prompt.token_ids)) {
            prompt.is_tokens = true;
        } else {
            return reader.fail("prompt", expected);
        }
        prompts.push_back(std::move(prompt));
    }
}

// Content as a string, or a list of parts of which the text ones are joined.
bool read_content(const json& content, std::string& text) {
    if (content.is_string()) {
        text = content.get<std::string>();
        return true;
    }
    if (!content.is_array()) return false;
    for (const json& part : content) {
        if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) return false;
        if (part["type"] != "text") continue;  // images and audio are not supported by these models
        if (!part.contains("text") || !part["text"].is_string()) return false;
        text += part["text"].get<std::string>();
    }
    return true;
}

void read_messages(FieldReader& reader, std::vector<api::ChatMessage>& messages) {
    const json* value = reader.find("messages");
    if (value == nullptr || !value->is_array() || value->empty()) {
        return reader.fail("messages", "'messages' must be a non-empty list of {role, content} objects");
    }
    for (const json& item : *value) {
        if (!item.is_object() || !item.contains("role") || !item["role"].is_string()) {
            return reader.fail("messages", "every message needs a string 'role'");
        }
        api::ChatMessage message{.role = item["role"].get<std::string>()};
        static const char* kRoles[] = {"system", "developer", "user", "assistant", "tool"};
        if (std::find(std::begin(kRoles), std::end(kRoles), message.role) == std::end(kRoles)) {
            return reader.fail("messages", fmt::format("unknown message role '{}'", message.role));
        }
        const auto content = item.find("content");
        const bool absent = content == item.end() || content->is_null();
        if (!absent && !read_content(*content, message.content)) {
            return reader.fail("messages", "'content' must be a string or a list of text parts");
        }
        messages.push_back(std::move(message));
    }
}

void read_logprobs(FieldReader& reader, api::Endpoint endpoint, CompletionRequest& request) {
    if (endpoint == api::Endpoint::kCompletions) {
        int top = -1;
        reader.integer("logprobs", 0, kMaxTopLogprobs, &top);
        request.logprobs = top >= 0;
        request.top_logprobs = top < 0 ? 0 : top;
        return;
    }
    reader.boolean("logprobs", &request.logprobs);
    reader.integer("top_logprobs", 0, kMaxTopLogprobs, &request.top_logprobs);
    if (reader.ok() && request.top_logprobs > 0 && !request.logprobs) {
        reader.fail("top_logprobs", "'top_logprobs' needs 'logprobs': true");
    }
}

}  // namespace

std::variant<CompletionRequest, RequestError> parse_completion_request(api::Endpoint endpoint, const json& body) {
    if (!body.is_object()) return RequestError{"the request body must be a JSON object", ""};
    FieldReader reader(body);
    CompletionRequest request;
    request.endpoint = endpoint;
    reader.string("model", &request.model);
    if (endpoint == api::Endpoint::kCompletions) {
        read_prompts(reader, request.prompts);
    } else {
        read_messages(reader, request.messages);
    }
    int64_t max_tokens = 0;
    const char* max_name = reader.find("max_completion_tokens") != nullptr ? "max_completion_tokens" : "max_tokens";
    if (reader.find(max_name) != nullptr) {
        reader.integer(max_name, 1, INT32_MAX, &max_tokens);
        request.max_tokens = max_tokens;
    }
    read_sampling(reader, request.sampling);
    read_stop(reader, request.stop);
    reader.integer("n", 1, kMaxChoices, &request.n);
    read_logprobs(reader, endpoint, request);
    reader.integer("priority", INT32_MIN, INT32_MAX, &request.priority);
    reader.boolean("ignore_eos", &request.ignore_eos);
    reader.boolean("stream", &request.stream);
    reader.string("user", &request.user);
    if (const json* options = reader.find("stream_options"); options != nullptr && reader.ok()) {
        if (!options->is_object()) {
            reader.fail("stream_options", "'stream_options' must be an object");
        } else if (auto usage = options->find("include_usage"); usage != options->end() && !usage->is_null()) {
            if (!usage->is_boolean()) reader.fail("stream_options", "'include_usage' must be true or false");
            else request.include_usage = usage->get<bool>();
        }
    }
    if (!reader.ok()) return reader.error();
    return request;
}

}  // namespace tern::server

#include "api/openai_types.h"

#include <fmt/format.h>

#include <set>

#include "api/request_fields.h"

namespace tern::api {
namespace {

using Json = nlohmann::json;

// Fields decoded into GenerationRequest members; the other accepted fields travel in `extra`.
const std::set<std::string, std::less<>> kMemberFields = {
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
    "ignore_eos", "temperature", "top_p", "top_k", "seed"};

Json prompt_json(const PromptInput& prompt) { return prompt.is_tokens ? Json(prompt.token_ids) : Json(prompt.text); }

Json message_json(const ChatMessage& message) {
    Json item = {{"role", message.role}, {"content", message.content}};
    for (const MessageToolCall& call : message.tool_calls) {
        item["tool_calls"].push_back({{"id", call.id},
                                      {"type", "function"},
                                      {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    // A tool message needs its tool_call_id to decode again, even an empty one.
    if (!message.tool_call_id.empty() || message.role == "tool") item["tool_call_id"] = message.tool_call_id;
    if (!message.name.empty()) item["name"] = message.name;
    if (!message.reasoning_content.empty()) item["reasoning_content"] = message.reasoning_content;
    return item;
}

// Reads a body check_request_body() accepted.
void read_members(Endpoint endpoint, const Json& body, GenerationRequest* request) {
    if (const Json* model = find_field(body, "model")) request->model = model->get<std::string>();
    request->max_tokens = max_tokens_of(endpoint, body);
    request->stream = field_value<bool>(body, "stream").value_or(false);
    request->ignore_eos = field_value<bool>(body, "ignore_eos").value_or(false);
    if (const Json* options = find_field(body, "stream_options")) {
        request->include_usage = field_value<bool>(*options, "include_usage").value_or(false);
    }
    request->temperature = field_value<double>(body, "temperature");
    request->top_p = field_value<double>(body, "top_p");
    request->top_k = field_value<int64_t>(body, "top_k");
    request->seed = field_value<int64_t>(body, "seed");
}

}  // namespace

std::string_view endpoint_path(Endpoint endpoint) {
    return endpoint == Endpoint::kCompletions ? "/v1/completions" : "/v1/chat/completions";
}

Result<Endpoint> endpoint_from_path(std::string_view path) {
    if (path == "/v1/completions" || path == "/completions") return Endpoint::kCompletions;
    if (path == "/v1/chat/completions" || path == "/chat/completions") return Endpoint::kChatCompletions;
    return invalid_argument(fmt::format("unknown endpoint '{}': use /v1/completions or /v1/chat/completions", path));
}

nlohmann::json to_json(const GenerationRequest& request) {
    Json body = Json::object();
    if (!request.model.empty()) body["model"] = request.model;
    if (request.endpoint == Endpoint::kCompletions) {
        if (request.prompts.size() == 1) {
            body["prompt"] = prompt_json(request.prompts[0]);
        } else {
            body["prompt"] = Json::array();
            for (const PromptInput& prompt : request.prompts) body["prompt"].push_back(prompt_json(prompt));
        }
    } else {
        Json messages = Json::array();
        for (const ChatMessage& message : request.messages) messages.push_back(message_json(message));
        body["messages"] = std::move(messages);
    }
    if (request.max_tokens) body["max_tokens"] = *request.max_tokens;
    body["stream"] = request.stream;
    if (request.stream && request.include_usage) body["stream_options"] = {{"include_usage", true}};
    if (request.ignore_eos) body["ignore_eos"] = true;
    if (request.temperature) body["temperature"] = *request.temperature;
    if (request.top_p) body["top_p"] = *request.top_p;
    if (request.top_k) body["top_k"] = *request.top_k;
    if (request.seed) body["seed"] = *request.seed;
    if (request.extra.is_object()) body.update(request.extra);
    return body;
}

Result<GenerationRequest> parse_generation_request(Endpoint endpoint, const nlohmann::json& body) {
    if (auto error = check_request_body(endpoint, body)) return invalid_argument(error->message);
    GenerationRequest request;
    request.endpoint = endpoint;
    const std::optional<FieldError> error = endpoint == Endpoint::kCompletions
                                                ? decode_prompts(*find_field(body, "prompt"), &request.prompts)
                                                : decode_messages(*find_field(body, "messages"), &request.messages);
    if (error) return invalid_argument(error->message);
    read_members(endpoint, body, &request);
    for (const auto& [key, value] : body.items()) {
        if (!value.is_null() && kMemberFields.find(key) == kMemberFields.end()) request.extra[key] = value;
    }
    return request;
}

nlohmann::json to_json(const Usage& usage) {
    nlohmann::json body = {{"prompt_tokens", usage.prompt_tokens},
                           {"completion_tokens", usage.completion_tokens},
                           {"total_tokens", usage.total_tokens}};
    if (usage.cached_tokens) body["prompt_tokens_details"] = {{"cached_tokens", *usage.cached_tokens}};
    return body;
}

Result<Usage> parse_usage(const nlohmann::json& value) {
    if (!value.is_object()) return invalid_argument("usage must be an object");
    Usage usage;
    for (auto [field, target] : {std::pair{"prompt_tokens", &usage.prompt_tokens},
                                 {"completion_tokens", &usage.completion_tokens},
                                 {"total_tokens", &usage.total_tokens}}) {
        if (!value.contains(field) || value[field].is_null()) continue;
        if (!value[field].is_number_integer() || value[field].get<int64_t>() < 0) {
            return invalid_argument(fmt::format("usage.{} must be an integer >= 0", field));
        }
        *target = value[field].get<int64_t>();
    }
    if (!value.contains("total_tokens")) usage.total_tokens = usage.prompt_tokens + usage.completion_tokens;
    const auto details = value.find("prompt_tokens_details");
    if (details != value.end() && details->is_object()) {
        const auto cached = details->find("cached_tokens");
        if (cached != details->end() && cached->is_number_integer() && cached->get<int64_t>() >= 0) {
            usage.cached_tokens = cached->get<int64_t>();
        }
    }
    return usage;
}

nlohmann::json to_json(const ApiError& error) {
    Json body = {{"message", error.message}, {"type", error.type}};
    body["code"] = error.code.empty() ? Json() : Json(error.code);
    return {{"error", std::move(body)}};
}

std::optional<ApiError> find_api_error(const nlohmann::json& value) {
    if (!value.is_object()) return std::nullopt;
    const Json* source = nullptr;
    if (value.contains("error") && value["error"].is_object()) {
        source = &value["error"];
    } else if (value.value("object", "") == "error") {
        source = &value;
    } else if (value.contains("error") && value["error"].is_string()) {
        return ApiError{value["error"].get<std::string>(), "", ""};
    }
    if (source == nullptr) return std::nullopt;
    ApiError error;
    if ((*source).contains("message") && (*source)["message"].is_string()) error.message = (*source)["message"];
    if ((*source).contains("type") && (*source)["type"].is_string()) error.type = (*source)["type"];
    if ((*source).contains("code")) {
        const Json& code = (*source)["code"];
        if (code.is_string()) error.code = code.get<std::string>();
        if (code.is_number_integer()) error.code = std::to_string(code.get<int64_t>());
    }
    return error;
}

ApiError parse_error_body(std::string_view body) {
    const Json value = Json::parse(body, nullptr, /*allow_exceptions=*/false);
    if (auto error = find_api_error(value)) return *error;
    size_t begin = body.find_first_not_of(" \t\r\n");
    size_t end = body.find_last_not_of(" \t\r\n");
    std::string text =
        begin == std::string_view::npos ? std::string() : std::string(body.substr(begin, end - begin + 1));
    if (text.size() > 512) text = text.substr(0, 512) + "...";
    return ApiError{std::move(text), "", ""};
}

nlohmann::json error_body(int status, const std::string& message, const std::string& param) {
    const char* type = status == 401   ? "authentication_error"
                       : status == 404 ? "not_found_error"
                       : status == 429 ? "rate_limit_exceeded"
                       : status >= 500 ? "server_error"
                                       : "invalid_request_error";
    nlohmann::json error = {{"message", message}, {"type", type}, {"code", status}};
    error["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
    return {{"error", std::move(error)}};
}

}  // namespace tern::api

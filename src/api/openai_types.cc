#include "api/openai_types.h"

#include <fmt/format.h>

#include <set>

namespace tern::api {
namespace {

using Json = nlohmann::json;

// Fields decoded into GenerationRequest members; every other field travels in `extra`.
const std::set<std::string, std::less<>> kKnownFields = {
    "model", "prompt", "messages", "max_tokens", "max_completion_tokens", "stream", "stream_options",
    "ignore_eos", "temperature", "top_p", "top_k", "seed"};

Status field_error(std::string_view field, std::string_view what) {
    return invalid_argument(fmt::format("request field '{}' {}", field, what));
}

Result<std::string> text_of_content(const Json& content) {
    if (content.is_null()) return std::string();
    if (content.is_string()) return content.get<std::string>();
    if (!content.is_array()) return field_error("messages[].content", "must be a string or an array of parts");
    std::string text;
    for (const Json& part : content) {
        if (!part.is_object() || !part.contains("type") || part["type"] != "text") {
            return field_error("messages[].content", "supports only parts of type \"text\"");
        }
        if (!part.contains("text") || !part["text"].is_string()) {
            return field_error("messages[].content[].text", "must be a string");
        }
        text += part["text"].get<std::string>();
    }
    return text;
}

Status parse_prompt(const Json& prompt, GenerationRequest* request) {
    if (prompt.is_string()) {
        request->prompt = prompt.get<std::string>();
        return Status::ok();
    }
    if (!prompt.is_array() || prompt.empty()) return field_error("prompt", "must be a string or an array of token ids");
    if (prompt.size() == 1 && prompt[0].is_string()) {
        request->prompt = prompt[0].get<std::string>();
        return Status::ok();
    }
    for (const Json& token : prompt) {
        if (!token.is_number_integer()) {
            return field_error("prompt", "must be one string or an array of token ids (batched prompts are not "
                                         "supported)");
        }
        const int64_t token_id = token.get<int64_t>();
        if (token_id < 0 || token_id > INT32_MAX) return field_error("prompt", "holds a token id out of range");
        request->prompt_token_ids.push_back(static_cast<int32_t>(token_id));
    }
    return Status::ok();
}

Status parse_messages(const Json& messages, GenerationRequest* request) {
    if (!messages.is_array() || messages.empty()) return field_error("messages", "must be a non-empty array");
    for (const Json& message : messages) {
        if (!message.is_object() || !message.contains("role") || !message["role"].is_string()) {
            return field_error("messages[].role", "must be a string");
        }
        TERN_ASSIGN_OR_RETURN(std::string content, text_of_content(message.value("content", Json())));
        request->messages.push_back({message["role"].get<std::string>(), std::move(content)});
    }
    return Status::ok();
}

Status parse_sampling(const Json& body, GenerationRequest* request) {
    if (body.contains("temperature")) {
        if (!body["temperature"].is_number() || body["temperature"].get<double>() < 0) {
            return field_error("temperature", "must be a number >= 0");
        }
        request->temperature = body["temperature"].get<double>();
    }
    if (body.contains("top_p")) {
        const Json& top_p = body["top_p"];
        if (!top_p.is_number() || top_p.get<double>() <= 0 || top_p.get<double>() > 1) {
            return field_error("top_p", "must be a number in (0, 1]");
        }
        request->top_p = top_p.get<double>();
    }
    if (body.contains("top_k")) {
        if (!body["top_k"].is_number_integer()) return field_error("top_k", "must be an integer");
        request->top_k = body["top_k"].get<int64_t>();
    }
    if (body.contains("seed")) {
        if (!body["seed"].is_number_unsigned()) return field_error("seed", "must be an integer >= 0");
        request->seed = body["seed"].get<uint64_t>();
    }
    return Status::ok();
}

Status parse_flags(const Json& body, GenerationRequest* request) {
    for (const char* field : {"max_tokens", "max_completion_tokens"}) {
        if (!body.contains(field) || body[field].is_null()) continue;
        if (!body[field].is_number_integer() || body[field].get<int64_t>() < 0) {
            return field_error(field, "must be an integer >= 0");
        }
        request->max_tokens = body[field].get<int64_t>();
    }
    for (auto [field, target] : {std::pair{"stream", &request->stream}, {"ignore_eos", &request->ignore_eos}}) {
        if (!body.contains(field)) continue;
        if (!body[field].is_boolean()) return field_error(field, "must be true or false");
        *target = body[field].get<bool>();
    }
    if (body.contains("stream_options") && !body["stream_options"].is_null()) {
        const Json& options = body["stream_options"];
        if (!options.is_object()) return field_error("stream_options", "must be an object");
        if (options.contains("include_usage")) {
            if (!options["include_usage"].is_boolean()) return field_error("stream_options.include_usage", "must be "
                                                                           "true or false");
            request->include_usage = options["include_usage"].get<bool>();
        }
    }
    return Status::ok();
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
        if (request.prompt_token_ids.empty()) {
            body["prompt"] = request.prompt;
        } else {
            body["prompt"] = request.prompt_token_ids;
        }
    } else {
        Json messages = Json::array();
        for (const ChatMessage& message : request.messages) {
            messages.push_back({{"role", message.role}, {"content", message.content}});
        }
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
    if (!body.is_object()) return invalid_argument("the request body must be a JSON object");
    GenerationRequest request;
    request.endpoint = endpoint;
    if (body.contains("model")) {
        if (!body["model"].is_string()) return field_error("model", "must be a string");
        request.model = body["model"].get<std::string>();
    }
    if (endpoint == Endpoint::kCompletions) {
        if (!body.contains("prompt")) return field_error("prompt", "is required");
        TERN_RETURN_IF_ERROR(parse_prompt(body["prompt"], &request));
    } else {
        if (!body.contains("messages")) return field_error("messages", "is required");
        TERN_RETURN_IF_ERROR(parse_messages(body["messages"], &request));
    }
    TERN_RETURN_IF_ERROR(parse_flags(body, &request));
    TERN_RETURN_IF_ERROR(parse_sampling(body, &request));
    for (const auto& [key, value] : body.items()) {
        if (kKnownFields.find(key) == kKnownFields.end()) request.extra[key] = value;
    }
    return request;
}

nlohmann::json to_json(const Usage& usage) {
    return {{"prompt_tokens", usage.prompt_tokens},
            {"completion_tokens", usage.completion_tokens},
            {"total_tokens", usage.total_tokens}};
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

}  // namespace tern::api

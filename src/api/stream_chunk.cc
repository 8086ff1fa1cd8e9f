#include "api/stream_chunk.h"

#include <fmt/format.h>

namespace tern::api {
namespace {

using Json = nlohmann::json;

// Text of a choice: completions' "text", or chat's delta "content", else the reasoning channel that reasoning models
// stream before their answer (vLLM "reasoning_content", newer servers "reasoning"): those are generated tokens too.
Result<std::string> choice_text(const Json& choice) {
    const Json* holder = &choice;
    const char* fields[] = {"text", "content", "reasoning_content", "reasoning"};
    if (choice.contains("delta")) {
        if (!choice["delta"].is_object()) return invalid_argument("choices[].delta must be an object");
        holder = &choice["delta"];
    }
    for (const char* field : fields) {
        if (!holder->contains(field)) continue;
        const Json& value = (*holder)[field];
        if (value.is_null()) continue;
        if (!value.is_string()) return invalid_argument(fmt::format("choices[].{} must be a string", field));
        if (!value.get_ref<const std::string&>().empty()) return value.get<std::string>();
    }
    return std::string();
}

Result<StreamChoice> parse_choice(const Json& value) {
    if (!value.is_object()) return invalid_argument("choices[] must hold objects");
    StreamChoice choice;
    if (value.contains("index") && value["index"].is_number_integer()) choice.index = value["index"].get<int64_t>();
    TERN_ASSIGN_OR_RETURN(choice.text, choice_text(value));
    if (value.contains("delta") && value["delta"].contains("role") && value["delta"]["role"].is_string()) {
        choice.role = value["delta"]["role"].get<std::string>();
    }
    if (value.contains("finish_reason") && value["finish_reason"].is_string()) {
        choice.finish_reason = value["finish_reason"].get<std::string>();
    }
    return choice;
}

}  // namespace

bool StreamChunk::has_text() const {
    for (const StreamChoice& choice : choices) {
        if (!choice.text.empty()) return true;
    }
    return false;
}

bool is_done_marker(std::string_view data) {
    while (!data.empty() && (data.back() == ' ' || data.back() == '\r' || data.back() == '\n')) data.remove_suffix(1);
    while (!data.empty() && data.front() == ' ') data.remove_prefix(1);
    return data == kDoneMarker;
}

Result<StreamChunk> parse_stream_chunk(std::string_view data) {
    const Json value = Json::parse(data, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) {
        const std::string_view head = data.substr(0, 80);
        return invalid_argument(fmt::format("stream chunk is not JSON: '{}'", head));
    }
    if (!value.is_object()) return invalid_argument("stream chunk must be a JSON object");
    StreamChunk chunk;
    chunk.error = find_api_error(value);
    if (value.contains("id") && value["id"].is_string()) chunk.id = value["id"].get<std::string>();
    if (value.contains("model") && value["model"].is_string()) chunk.model = value["model"].get<std::string>();
    if (value.contains("choices") && !value["choices"].is_null()) {
        if (!value["choices"].is_array()) return invalid_argument("stream chunk 'choices' must be an array");
        for (const Json& choice_value : value["choices"]) {
            TERN_ASSIGN_OR_RETURN(StreamChoice choice, parse_choice(choice_value));
            chunk.choices.push_back(std::move(choice));
        }
    }
    if (value.contains("usage") && !value["usage"].is_null()) {
        TERN_ASSIGN_OR_RETURN(Usage usage, parse_usage(value["usage"]));
        chunk.usage = usage;
    }
    return chunk;
}

nlohmann::json to_json(const StreamChunk& chunk, Endpoint endpoint, int64_t created_unix_s) {
    const bool chat = endpoint == Endpoint::kChatCompletions;
    Json choices = Json::array();
    for (const StreamChoice& choice : chunk.choices) {
        Json item = {{"index", choice.index}};
        if (chat) {
            Json delta = Json::object();
            if (choice.role) delta["role"] = *choice.role;
            if (!choice.text.empty()) delta["content"] = choice.text;
            item["delta"] = std::move(delta);
        } else {
            item["text"] = choice.text;
        }
        item["finish_reason"] = choice.finish_reason ? Json(*choice.finish_reason) : Json();
        choices.push_back(std::move(item));
    }
    Json value = {{"id", chunk.id},
                  {"object", chat ? "chat.completion.chunk" : "text_completion"},
                  {"created", created_unix_s},
                  {"model", chunk.model},
                  {"choices", std::move(choices)}};
    if (chunk.usage) value["usage"] = to_json(*chunk.usage);
    if (chunk.error) value["error"] = to_json(*chunk.error)["error"];
    return value;
}

}  // namespace tern::api

#include "server/responses.h"

namespace tern::server {
namespace {

using nlohmann::json;

bool is_chat(const ResponseMeta& meta) { return meta.endpoint == api::Endpoint::kChatCompletions; }

json bytes_of(const std::string& text) {
    json bytes = json::array();
    for (unsigned char byte : text) bytes.push_back(static_cast<int>(byte));
    return bytes;
}

// Completions: parallel arrays; `text_offset` counts from the start of this choice's text. An echoed prompt's first
// token has null for its logprob and alternatives, as OpenAI answers.
json completion_logprobs(const std::vector<TokenLogprob>& logprobs, size_t first_offset) {
    json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
    size_t offset = first_offset;
    for (const TokenLogprob& item : logprobs) {
        tokens.push_back(item.token);
        token_logprobs.push_back(item.logprob ? json(*item.logprob) : json(nullptr));
        json alternatives = item.logprob ? json::object() : json(nullptr);
        for (const auto& [token, logprob] : item.top) alternatives[token] = logprob;
        top.push_back(alternatives);
        offsets.push_back(offset);
        offset += item.token.size();
    }
    return {{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

json chat_logprobs(const std::vector<TokenLogprob>& logprobs) {
    json content = json::array();
    for (const TokenLogprob& item : logprobs) {
        json top = json::array();
        for (const auto& [token, logprob] : item.top) {
            top.push_back({{"token", token}, {"logprob", logprob}, {"bytes", bytes_of(token)}});
        }
        content.push_back({{"token", item.token}, {"logprob", item.logprob.value_or(0.0f)},
                           {"bytes", bytes_of(item.token)}, {"top_logprobs", top}});
    }
    return {{"content", content}};
}

json logprobs_json(const ResponseMeta& meta, const std::vector<TokenLogprob>& logprobs) {
    if (!meta.with_logprobs) return nullptr;
    return is_chat(meta) ? chat_logprobs(logprobs) : completion_logprobs(logprobs, 0);
}

// [null, {"<id>": {"logprob", "rank", "decoded_token"}, ...}, ...]: the first prompt token follows nothing.
json prompt_logprobs_json(const std::vector<PositionLogprobs>& positions) {
    json list = json::array({nullptr});
    for (const PositionLogprobs& position : positions) {
        json tokens = json::object();
        for (const RankedToken& token : position) {
            tokens[std::to_string(token.id)] = {{"logprob", token.logprob}, {"rank", token.rank},
                                                {"decoded_token", token.piece}};
        }
        list.push_back(std::move(tokens));
    }
    return list;
}

json tool_calls_json(const std::vector<tools::ToolCall>& calls) {
    json list = json::array();
    for (const tools::ToolCall& call : calls) {
        list.push_back({{"id", call.id},
                        {"type", "function"},
                        {"function", {{"name", call.name}, {"arguments", call.arguments}}}});
    }
    return list;
}

json tool_call_delta_json(const tools::ToolCallDelta& delta) {
    if (delta.id.empty()) return {{"index", delta.index}, {"function", {{"arguments", delta.arguments}}}};
    return {{"index", delta.index},
            {"id", delta.id},
            {"type", "function"},
            {"function", {{"name", delta.name}, {"arguments", delta.arguments}}}};
}

// OpenAI's assistant message: content null when the reply is only calls.
json chat_message(const ChoiceResult& choice) {
    json message = {{"role", "assistant"}, {"content", choice.text}};
    if (!choice.reasoning.empty()) message["reasoning_content"] = choice.reasoning;
    if (choice.tool_calls.empty()) return message;
    if (choice.text.empty()) message["content"] = nullptr;
    message["tool_calls"] = tool_calls_json(choice.tool_calls);
    return message;
}

json envelope(const ResponseMeta& meta, const char* object) {
    return {{"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

}  // namespace

json completion_response(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices, const api::Usage& usage) {
    json body = envelope(meta, is_chat(meta) ? "chat.completion" : "text_completion");
    json list = json::array();
    for (const ChoiceResult& choice : choices) {
        json item = {{"index", choice.index}, {"logprobs", logprobs_json(meta, choice.logprobs)},
                     {"finish_reason", choice.finish_reason}};
        if (is_chat(meta)) {
            item["message"] = chat_message(choice);
        } else {
            item["text"] = choice.text;
            if (choice.prompt_logprobs) item["prompt_logprobs"] = prompt_logprobs_json(*choice.prompt_logprobs);
        }
        list.push_back(std::move(item));
    }
    body["choices"] = std::move(list);
    if (is_chat(meta) && !choices.empty() && choices.front().prompt_logprobs) {
        body["prompt_logprobs"] = prompt_logprobs_json(*choices.front().prompt_logprobs);
    }
    body["usage"] = api::to_json(usage);
    return body;
}

json stream_chunk(const ResponseMeta& meta, int index, const std::string& text,
                  const std::vector<TokenLogprob>& logprobs, const std::optional<std::string>& finish_reason,
                  bool first, const std::vector<tools::ToolCallDelta>& tool_calls, const std::string& reasoning) {
    json body = envelope(meta, is_chat(meta) ? "chat.completion.chunk" : "text_completion");
    json choice = {{"index", index}, {"logprobs", logprobs_json(meta, logprobs)}};
    choice["finish_reason"] = finish_reason ? json(*finish_reason) : json(nullptr);
    if (is_chat(meta)) {
        json delta = json::object();
        if (first) delta["role"] = "assistant";
        if (!reasoning.empty()) delta["reasoning_content"] = reasoning;
        if (!text.empty() || (!finish_reason && tool_calls.empty() && reasoning.empty())) delta["content"] = text;
        for (const tools::ToolCallDelta& call : tool_calls) delta["tool_calls"].push_back(tool_call_delta_json(call));
        choice["delta"] = std::move(delta);
    } else {
        choice["text"] = text;
    }
    body["choices"] = json::array({std::move(choice)});
    return body;
}

json usage_chunk(const ResponseMeta& meta, const api::Usage& usage) {
    json body = envelope(meta, is_chat(meta) ? "chat.completion.chunk" : "text_completion");
    body["choices"] = json::array();
    body["usage"] = api::to_json(usage);
    return body;
}

}  // namespace tern::server

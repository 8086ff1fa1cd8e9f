#include "route/two_tier.h"

#include <algorithm>
#include <cctype>

namespace tern::route {
namespace {

using nlohmann::json;

std::string lowercase(std::string text) {
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
    return text;
}

// The first choice's text, whichever endpoint answered.
std::string choice_text(const json& choice) {
    if (choice.contains("text") && choice["text"].is_string()) return choice["text"].get<std::string>();
    if (choice.contains("message") && choice["message"].is_object()) {
        const json& message = choice["message"];
        if (message.contains("content") && message["content"].is_string()) return message["content"].get<std::string>();
    }
    return "";
}

// Token logprobs of a choice: completions' logprobs.token_logprobs, or chat's logprobs.content[].logprob.
std::vector<double> token_logprobs(const json& choice) {
    std::vector<double> values;
    if (!choice.contains("logprobs") || !choice["logprobs"].is_object()) return values;
    const json& logprobs = choice["logprobs"];
    if (logprobs.contains("token_logprobs") && logprobs["token_logprobs"].is_array()) {
        for (const json& value : logprobs["token_logprobs"]) {
            if (value.is_number()) values.push_back(value.get<double>());
        }
    } else if (logprobs.contains("content") && logprobs["content"].is_array()) {
        for (const json& token : logprobs["content"]) {
            if (token.is_object() && token.contains("logprob") && token["logprob"].is_number()) {
                values.push_back(token["logprob"].get<double>());
            }
        }
    }
    return values;
}

bool client_asked_logprobs(const json& body, bool chat) {
    const auto found = body.find("logprobs");
    if (found == body.end() || found->is_null()) return false;
    return chat ? (found->is_boolean() && found->get<bool>()) : found->is_number();
}

}  // namespace

Verdict judge(const json& answer, const TwoTierConfig& config) {
    Verdict verdict;
    if (!answer.is_object() || !answer.contains("choices") || !answer["choices"].is_array() || answer["choices"].empty()) {
        return Verdict{.escalate = true, .reason = "no answer"};
    }
    const json& choice = answer["choices"][0];
    const std::vector<double> logprobs = token_logprobs(choice);
    verdict.scored_tokens = static_cast<int64_t>(logprobs.size());
    for (double value : logprobs) verdict.mean_logprob += value;
    if (!logprobs.empty()) verdict.mean_logprob /= static_cast<double>(logprobs.size());
    const std::string text = lowercase(choice_text(choice));
    for (const std::string& phrase : config.refusals) {
        if (!phrase.empty() && text.find(lowercase(phrase)) != std::string::npos) {
            verdict.escalate = true;
            verdict.reason = "refusal";
            return verdict;
        }
    }
    if (config.escalate_on_length && choice.value("finish_reason", json()) == "length") {
        verdict.escalate = true;
        verdict.reason = "length";
    } else if (!logprobs.empty() && verdict.mean_logprob < config.min_mean_logprob) {
        verdict.escalate = true;
        verdict.reason = "logprob";
    }
    return verdict;
}

json small_tier_body(json body, bool chat) {
    body.erase("stream");
    body.erase("stream_options");
    if (chat) {
        body["logprobs"] = true;
    } else if (!body.contains("logprobs") || !body["logprobs"].is_number()) {
        body["logprobs"] = 0;  // the chosen token's logprob only
    }
    return body;
}

Recording client_answer(const json& small_answer, const json& client_body, bool chat) {
    json answer = small_answer;
    if (!client_asked_logprobs(client_body, chat) && answer.contains("choices") && answer["choices"].is_array()) {
        for (json& choice : answer["choices"]) {
            if (choice.is_object()) choice["logprobs"] = nullptr;
        }
    }
    Recording recording;
    if (!client_body.value("stream", false)) {
        recording.body = answer.dump();
        return recording;
    }
    recording.streamed = true;
    recording.content_type = "text/event-stream";
    json chunk = {{"id", answer.value("id", "")}, {"created", answer.value("created", 0)},
                  {"model", answer.value("model", "")}, {"object", chat ? "chat.completion.chunk" : "text_completion"}};
    json choices = json::array();
    for (const json& choice : answer.value("choices", json::array())) {
        json streamed = {{"index", choice.value("index", 0)}, {"finish_reason", choice.value("finish_reason", json())},
                         {"logprobs", choice.value("logprobs", json())}};
        if (chat) {
            streamed["delta"] = {{"role", "assistant"}, {"content", choice_text(choice)}};
        } else {
            streamed["text"] = choice_text(choice);
        }
        choices.push_back(std::move(streamed));
    }
    chunk["choices"] = std::move(choices);
    recording.events.push_back(chunk.dump());
    const auto options = client_body.find("stream_options");
    if (options != client_body.end() && options->is_object() && options->value("include_usage", false) &&
        answer.contains("usage")) {
        json usage = chunk;
        usage["choices"] = json::array();
        usage["usage"] = answer["usage"];
        recording.events.push_back(usage.dump());
    }
    recording.events.push_back("[DONE]");
    return recording;
}

}  // namespace tern::route

#include "server/chat_prompt.h"

#include <fstream>
#include <memory>
#include <sstream>

#include "chat/chat_template.h"

namespace tern::server {
namespace {

// Calls' arguments are parsed for the template (HF templates write `arguments | tojson`), keeping their order; the
// request's decoding checked that they are JSON.
std::vector<chat::ChatMessage> to_chat(const std::vector<api::ChatMessage>& messages) {
    std::vector<chat::ChatMessage> converted;
    for (const api::ChatMessage& message : messages) {
        chat::ChatMessage chat_message{message.role, message.content, {}, message.tool_call_id, message.name,
                                       message.reasoning_content};
        for (const api::MessageToolCall& call : message.tool_calls) {
            chat_message.tool_calls.push_back(
                {call.id, call.name, nlohmann::ordered_json::parse(call.arguments, nullptr, false)});
        }
        converted.push_back(std::move(chat_message));
    }
    return converted;
}

chat::ChatTemplateOptions with_kwargs(chat::ChatTemplateOptions options, const nlohmann::json& template_kwargs,
                                      const nlohmann::ordered_json& tools) {
    const auto generation_prompt = template_kwargs.find("add_generation_prompt");
    if (generation_prompt != template_kwargs.end() && generation_prompt->is_boolean()) {
        options.add_generation_prompt = generation_prompt->get<bool>();
    }
    options.variables = nlohmann::ordered_json(template_kwargs);
    options.tools = tools;
    return options;
}

std::string special_text(const Tokenizer& tokenizer, int32_t id) {
    return id >= 0 && id < tokenizer.vocab_size() ? tokenizer.token_text(id) : std::string();
}

}  // namespace

Result<ChatPrompt> make_chat_prompt(const GgufFile& model_file, const Tokenizer& tokenizer,
                                    const std::string& template_path) {
    std::string source;
    std::string origin;
    if (!template_path.empty()) {
        std::ifstream file(template_path);
        if (!file) return invalid_argument("cannot read the chat template file '" + template_path + "'");
        std::ostringstream text;
        text << file.rdbuf();
        source = text.str();
        origin = "file " + template_path;
    } else if (auto from_model = model_file.get_string("tokenizer.chat_template")) {
        source = *from_model;
        origin = "model";
    }
    chat::ChatTemplateOptions options{.bos_token = special_text(tokenizer, tokenizer.bos_id()),
                                      .eos_token = special_text(tokenizer, tokenizer.eos_id()),
                                      .add_generation_prompt = true};
    if (source.empty()) {
        return ChatPrompt{[options](const std::vector<api::ChatMessage>& messages,
                                    const nlohmann::json& template_kwargs,
                                    const nlohmann::ordered_json& tools) -> Result<std::string> {
                              return chat::render_fallback(to_chat(messages),
                                                           with_kwargs(options, template_kwargs, tools));
                          },
                          "fallback", std::nullopt};
    }
    auto parsed = chat::ChatTemplate::parse(source);
    if (!parsed.is_ok()) return invalid_argument("chat template (" + origin + "): " + parsed.status().message());
    auto shared = std::make_shared<chat::ChatTemplate>(std::move(parsed.value()));
    return ChatPrompt{[shared, options](const std::vector<api::ChatMessage>& messages,
                                        const nlohmann::json& template_kwargs,
                                        const nlohmann::ordered_json& tools) -> Result<std::string> {
                          return shared->render(to_chat(messages), with_kwargs(options, template_kwargs, tools));
                      },
                      origin, tools::detect_tool_format(source), tools::detect_reasoning_format(source)};
}

}  // namespace tern::server

#include "server/tool_calls.h"

#include <fmt/format.h>

#include "grammar/tool_call_gbnf.h"

namespace tern::server {
namespace {

bool marker_is_control_token(tools::ToolFormat format, const Tokenizer& tokenizer) {
    // Llama 3's <|python_tag|> may vanish: its calls also open with a bare "{", and other control tokens stay out
    // of the content.
    if (format == tools::ToolFormat::kLlama3Json) return false;
    const std::optional<int32_t> id = tokenizer.find_token(tools::tool_marker(format));
    return id && tokenizer.is_control(*id);
}

}  // namespace

std::optional<ToolParsing> plan_tool_parsing(tools::ToolFormat format, const Tokenizer& tokenizer,
                                             const std::optional<api::ToolRequest>& tools) {
    if (!tools || tools->choice == api::ToolChoice::kNone) return std::nullopt;
    ToolParsing parsing{.format = format,
                        .several_calls = tools->parallel_calls && tools->choice != api::ToolChoice::kFunction,
                        .render_special = marker_is_control_token(format, tokenizer)};
    if (tools->choice == api::ToolChoice::kFunction) {
        parsing.names.push_back(tools->chosen_function);
        return parsing;
    }
    for (const api::ToolFunction& function : tools->functions) parsing.names.push_back(function.name);
    return parsing;
}

std::variant<std::shared_ptr<const grammar::CompiledGrammar>, RequestError> compile_tool_grammar(
    grammar::GrammarCache& cache, tools::ToolFormat format, const api::ToolRequest& tools,
    const std::optional<ThinkingFirst>& thinking) {
    const bool forced = tools.choice == api::ToolChoice::kRequired || tools.choice == api::ToolChoice::kFunction;
    if (!forced) return std::shared_ptr<const grammar::CompiledGrammar>();
    std::vector<grammar::ToolSignature> signatures;
    std::vector<size_t> tool_indices;  // each signature's place in the request's `tools`
    for (size_t tool_idx = 0; tool_idx < tools.functions.size(); ++tool_idx) {
        const api::ToolFunction& function = tools.functions[tool_idx];
        if (tools.choice == api::ToolChoice::kFunction && function.name != tools.chosen_function) continue;
        signatures.push_back({function.name, function.parameters});
        tool_indices.push_back(tool_idx);
    }
    const bool several = tools.choice == api::ToolChoice::kRequired && tools.parallel_calls;
    size_t failed = 0;
    Result<std::string> text = grammar::tool_call_gbnf(tools::call_syntax(format), signatures, several, &failed);
    if (!text.is_ok()) {
        const std::string param = fmt::format("tools[{}].function.parameters",
                                              failed < tool_indices.size() ? tool_indices[failed] : 0);
        return RequestError{fmt::format("'{}': {}", param, text.status().message()), param};
    }
    auto compiled = compile_answer(cache, text.value(), thinking);
    if (!compiled.is_ok()) {
        return RequestError{"'tool_choice': the tool-call grammar cannot be used: " + compiled.status().message(),
                            "tool_choice"};
    }
    return compiled.value();
}

std::unique_ptr<tools::ToolCallParser> make_tool_parser(const ToolParsing& parsing) {
    return std::make_unique<tools::ToolCallParser>(
        tools::ParserOptions{.format = parsing.format, .tool_names = parsing.names,
                             .several_calls = parsing.several_calls});
}

}  // namespace tern::server

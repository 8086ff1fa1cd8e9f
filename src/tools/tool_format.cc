#include "tools/tool_format.h"

#include <random>

namespace tern::tools {
namespace {

bool contains(std::string_view text, std::string_view part) { return text.find(part) != std::string_view::npos; }

std::string random_alphanumeric(size_t length) {
    static constexpr std::string_view kAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    // One generator per thread, seeded from the OS: no lock between HTTP threads.
    thread_local std::mt19937_64 generator{(static_cast<uint64_t>(std::random_device{}()) << 32) ^
                                           std::random_device{}()};
    std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
    std::string text(length, ' ');
    for (char& c : text) c = kAlphabet[pick(generator)];
    return text;
}

}  // namespace

// Checked most specific first: each marker is a token of its own family and appears in the template only where it
// renders a call (or, for Llama 3.2, the literal "parameters" key of the call it describes).
std::optional<ToolFormat> detect_tool_format(std::string_view chat_template) {
    if (contains(chat_template, "[TOOL_CALLS]")) return ToolFormat::kMistral;
    if (contains(chat_template, "<tool_call>")) return ToolFormat::kHermes;
    const bool llama3 = contains(chat_template, "<|start_header_id|>");
    if (llama3 && (contains(chat_template, "<|python_tag|>") || contains(chat_template, "\"parameters\""))) {
        return ToolFormat::kLlama3Json;
    }
    return std::nullopt;
}

std::string_view format_name(ToolFormat format) {
    switch (format) {
        case ToolFormat::kHermes: return "hermes";
        case ToolFormat::kLlama3Json: return "llama3_json";
        case ToolFormat::kMistral: return "mistral";
    }
    return "unknown";
}

std::string_view tool_marker(ToolFormat format) {
    switch (format) {
        case ToolFormat::kHermes: return "<tool_call>";
        case ToolFormat::kLlama3Json: return "<|python_tag|>";
        case ToolFormat::kMistral: return "[TOOL_CALLS]";
    }
    return "";
}

grammar::ToolCallSyntax call_syntax(ToolFormat format) {
    switch (format) {
        case ToolFormat::kHermes:
            return {.call_begin = "<tool_call>\n", .arguments_key = "arguments", .call_end = "\n</tool_call>",
                    .separator = "\n"};
        case ToolFormat::kLlama3Json: return {.arguments_key = "parameters"};
        case ToolFormat::kMistral:
            return {.calls_begin = "[TOOL_CALLS] [", .arguments_key = "arguments", .separator = ", ",
                    .calls_end = "]"};
    }
    return {};
}

std::string make_call_id(ToolFormat format) {
    if (format == ToolFormat::kMistral) return random_alphanumeric(9);
    return "call_" + random_alphanumeric(24);
}

}  // namespace tern::tools

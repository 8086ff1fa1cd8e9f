// Chat templates come inside model files and their variables from clients (chat_template_kwargs): the interpreter
// must parse and render any of them within its budget, failing with a Status, never crashing or running unbounded.
// Input: the template's source, then optionally a 0 byte and the kwargs as JSON.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "chat/chat_template.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view input(reinterpret_cast<const char*>(data), size);
    const size_t split = input.find('\0');
    const std::string source(input.substr(0, split));
    tern::chat::ChatTemplateOptions options;
    options.bos_token = "<s>";
    options.eos_token = "</s>";
    std::tm fixed{};
    fixed.tm_year = 126;
    options.now = fixed;
    if (split != std::string_view::npos) {
        auto kwargs = nlohmann::ordered_json::parse(input.substr(split + 1), nullptr, false);
        if (kwargs.is_object()) options.variables = std::move(kwargs);
    }
    auto parsed = tern::chat::ChatTemplate::parse(source);
    if (!parsed.is_ok()) return 0;
    const std::vector<tern::chat::ChatMessage> messages = {
        {"system", "Be brief."}, {"user", "Hi"}, {"assistant", "Hello."}, {"user", "Tell me a story"}};
    auto rendered = parsed.value().render(messages, options);
    if (rendered.is_ok()) tern::fuzz::keep(rendered.value().size());
    return 0;
}

// A Jinja2-subset template engine, enough for the chat templates models ship in tokenizer_config.json / GGUF
// metadata, and faithful to how Hugging Face renders them (see chat_template.h). It does not do template
// inheritance, includes, imports, call blocks, recursive loops or autoescaping.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"
#include "chat/ast.h"
#include "chat/runtime.h"
#include "chat/value.h"

namespace tern::chat::jinja {

struct ParseOptions {
    // Hugging Face's apply_chat_template turns both on; plain Jinja2 has both off.
    bool trim_blocks = true;
    bool lstrip_blocks = true;
};

// A parsed template. Immutable and cheap to copy; render() may run on many threads at once.
class Template {
public:
    // Fails on any syntax error, unknown tag, filter or test, or nesting too deep, with "line L, column C: ...".
    static Result<Template> parse(std::string_view source, const ParseOptions& options = {});

    // Renders with `context` (a dict; undefined or none for no variables) as the template's variables. Errors, including the
    // template's own raise_exception(), come back as a Status with the line and column; exhausting a limit of
    // `options` is kResourceExhausted.
    Result<std::string> render(const Value& context, const RenderOptions& options = {}) const;

private:
    explicit Template(std::shared_ptr<const Body> body) : body_(std::move(body)) {}

    std::shared_ptr<const Body> body_;
};

}  // namespace tern::chat::jinja

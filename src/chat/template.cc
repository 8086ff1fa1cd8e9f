#include "chat/template.h"

#include "chat/evaluator.h"
#include "chat/parser.h"

namespace tern::chat::jinja {

Result<Template> Template::parse(std::string_view source, const ParseOptions& options) {
    LexOptions lex;
    lex.trim_blocks = options.trim_blocks;
    lex.lstrip_blocks = options.lstrip_blocks;
    TERN_ASSIGN_OR_RETURN(Body body, Parser::parse(source, lex));
    return Template(std::make_shared<const Body>(std::move(body)));
}

Result<std::string> Template::render(const Value& context, const RenderOptions& options) const {
    if (!context.is_undefined() && !context.is_none() && !context.is_mapping()) {
        return invalid_argument(std::string("a template's context must be a dict, not ") + context.type_name());
    }
    Evaluator evaluator(context, options);
    return evaluator.render(*body_);
}

}  // namespace tern::chat::jinja

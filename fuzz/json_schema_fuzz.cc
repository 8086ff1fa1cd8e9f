// JSON Schemas from anywhere (response_format, guided_json, tool parameters) through the grammar compiler: each is
// refused with a Status or becomes GBNF that the GBNF parser accepts, the same text every time. A schema the
// compiler accepts but whose grammar does not parse would reach a request as a 500 instead of a 400.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "fuzz_util.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    // ordered_json, as the server reads request bodies: property order is the schema's.
    const nlohmann::ordered_json schema = nlohmann::ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (schema.is_discarded()) return 0;
    auto gbnf = tern::grammar::json_schema_to_gbnf(schema, "root");
    if (!gbnf.is_ok()) {
        TERN_FUZZ_CHECK(!gbnf.status().message().empty(), "a refusal says why");
        return 0;
    }
    auto grammar = tern::grammar::parse_gbnf(gbnf.value(), "root");
    if (!grammar.is_ok()) {
        std::fprintf(stderr, "%s\n--- grammar ---\n%s\n", grammar.status().message().c_str(), gbnf.value().c_str());
    }
    TERN_FUZZ_CHECK(grammar.is_ok(), "the compiled schema is not valid GBNF");
    auto again = tern::grammar::json_schema_to_gbnf(schema, "root");
    TERN_FUZZ_CHECK(again.is_ok() && again.value() == gbnf.value(), "compiling is not deterministic");
    // A helper-rule prefix other than "root", as tool-call grammars use, must parse the same way.
    auto named = tern::grammar::json_schema_to_gbnf(schema, "tool_1-args");
    TERN_FUZZ_CHECK(named.is_ok(), "a rule name changed whether the schema compiles");
    TERN_FUZZ_CHECK(tern::grammar::parse_gbnf(named.value(), "tool_1-args").is_ok(),
                    "the schema under another rule name is not valid GBNF");
    return 0;
}

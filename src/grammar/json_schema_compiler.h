// Internal to json_schema_to_gbnf: the compiler state shared by the files that handle each kind of schema
// (json_schema_to_gbnf.cc: dispatch, references, composition; json_schema_rules.cc: helper rules, names and GBNF
// spelling; json_schema_objects.cc; json_schema_arrays.cc: arrays and strings; json_schema_numbers.cc).
// Not a public interface.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "grammar/gbnf.h"  // gbnf_literal

namespace tern::grammar::json_schema {

using Json = nlohmann::ordered_json;

// Rules that do not depend on a schema, defined once per grammar on first use as `<prefix>-<name>`.
enum class Helper {
    kWs,
    kChar,
    kUnicodeEscape,
    kString,
    kInteger,
    kNumber,
    kFraction,
    kExponent,
    kPositiveNumber,
    kBoolean,
    kNull,
    kValue,
    kObject,
    kArray,
    kDate,
    kTime,
    kUuid,
};

// "json_schema: <what> (at <pointer>)".
Status schema_error(const std::string& what, const std::string& pointer);
// `pointer` extended by one reference token, escaped as RFC 6901 says (~ as ~0, / as ~1).
std::string child_pointer(const std::string& pointer, std::string_view token);
// A GBNF class [...] of the inclusive code point ranges, every bound written as an escape.
std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges);
// Whether `text` can be a GBNF rule name (letters, digits, '-', '_').
bool is_rule_name(std::string_view text);
// "( a | b )", or the single alternative as it is.
std::string any_of_texts(const std::vector<std::string>& alternatives);
// The compact JSON spelling of `value`, or an error for invalid UTF-8 in a string.
Result<std::string> dump_compact(const Json& value, const std::string& pointer);

// The GBNF for a range of integers: optional bounds, |bound| <= 10^18. Exposed for tests of the digit logic.
Result<std::string> integer_range_gbnf(std::optional<int64_t> min, std::optional<int64_t> max);

class SchemaCompiler {
public:
    SchemaCompiler(const Json& root, std::string rule_name);

    // The whole grammar text for the root schema.
    Result<std::string> compile_root();
    // The text for "any JSON object" or "any JSON value" under `rule_name`.
    std::string any_object_grammar();
    std::string any_value_grammar();

    // An expression (safe to place in a sequence) for `schema`, found at `pointer`; rules it needs are named
    // `name-...`.
    Result<std::string> compile(const Json& schema, const std::string& pointer, const std::string& name);
    // A rule name (or a single-element expression) for `schema`: a new rule named after `name` when needed.
    Result<std::string> compile_to_rule(const Json& schema, const std::string& pointer, const std::string& name);

    Result<std::string> compile_object(const Json& schema, const std::string& pointer, const std::string& name);
    Result<std::string> compile_array(const Json& schema, const std::string& pointer, const std::string& name);
    Result<std::string> compile_string(const Json& schema, const std::string& pointer, const std::string& name);
    Result<std::string> compile_integer(const Json& schema, const std::string& pointer);
    Result<std::string> compile_number(const Json& schema, const std::string& pointer);

    // The name of a helper rule, defining it (and the helpers it uses) on first use.
    std::string helper(Helper kind);
    // A name not used yet, made from `base` (a readable name for a rule of this grammar).
    std::string fresh_name(const std::string& base);
    // `base` plus a readable form of `text` (a property key, a $defs name): letters, digits, '_' and '-'.
    static std::string name_from(const std::string& base, std::string_view text);
    void define(const std::string& name, std::string body);
    // A name for the entry rule of another converter's output (regex_to_gbnf), whose helpers are `name-N`: no
    // name of this grammar has that form, and fresh_name will not hand one out.
    std::string fresh_foreign_name(const std::string& base);
    // Appends rules that another converter wrote.
    void add_foreign_rules(const std::string& text) { foreign_text_ += text; }
    const std::string& prefix() const { return prefix_; }

private:
    Result<std::string> compile_reference(const Json& schema, const std::string& pointer);
    Result<std::string> compile_composition(const Json& schema, const std::string& pointer, const std::string& name);
    Result<std::string> compile_types(const Json& schema, const std::string& pointer, const std::string& name);
    Result<std::string> compile_type(const std::string& type, const Json& schema, const std::string& pointer,
                                     const std::string& name);
    std::string helper_body(Helper kind);
    static std::string format_body(Helper kind);
    static std::string_view helper_suffix(Helper kind);
    bool reserved_for_foreign(const std::string& name) const;
    // The entry rule with `body`, then every other rule.
    std::string grammar_text(const std::string& body) const;

    const Json& root_;
    std::string prefix_;
    std::vector<std::pair<std::string, std::string>> rules_;  // in definition order
    std::set<std::string> used_names_;
    std::set<std::string> foreign_prefixes_;  // entry names of regex_to_gbnf output: its helpers are `name-N`
    std::map<std::string, std::string> reference_rules_;  // "#/$defs/x" -> rule
    std::string foreign_text_;
    std::map<Helper, std::string> helpers_;
    int depth_ = 0;
};

}  // namespace tern::grammar::json_schema

// The schema-independent parts of json_schema_to_gbnf: GBNF spelling, the shared helper rules (whitespace, strings,
// numbers, any value) and the naming of rules.
#include <algorithm>
#include <cctype>
#include <cstdio>

#include "grammar/json_schema_compiler.h"

namespace tern::grammar::json_schema {
namespace {

bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_'; }

bool all_digits(std::string_view text) {
    return !text.empty() &&
           std::all_of(text.begin(), text.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

}  // namespace

Status schema_error(const std::string& what, const std::string& pointer) {
    return invalid_argument("json_schema: " + what + " (at " + (pointer.empty() ? "the root" : pointer) + ")");
}

std::string child_pointer(const std::string& pointer, std::string_view token) {
    std::string out = pointer + "/";
    for (char c : token) {
        if (c == '~') {
            out += "~0";
        } else if (c == '/') {
            out += "~1";
        } else {
            out += c;
        }
    }
    return out;
}

std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
    const auto escape = [](uint32_t code_point) {
        char text[16];
        if (code_point < 0x10000) {
            std::snprintf(text, sizeof(text), "\\u%04X", static_cast<unsigned>(code_point));
        } else {
            std::snprintf(text, sizeof(text), "\\U%08X", static_cast<unsigned>(code_point));
        }
        return std::string(text);
    };
    std::string out = "[";
    for (const auto& [low, high] : ranges) {
        out += escape(low);
        if (high != low) out += std::string("-") + escape(high);
    }
    return out + "]";
}

std::string any_of_texts(const std::vector<std::string>& alternatives) {
    if (alternatives.size() == 1) return alternatives[0];
    std::string out = "(";
    for (size_t alternative_idx = 0; alternative_idx < alternatives.size(); ++alternative_idx) {
        out += (alternative_idx == 0 ? " " : " | ") + alternatives[alternative_idx];
    }
    return out + " )";
}

Result<std::string> dump_compact(const Json& value, const std::string& pointer) {
    try {
        return value.dump(-1, ' ', false, Json::error_handler_t::strict);
    } catch (const Json::exception& error) {
        return schema_error(std::string("a value cannot be written as JSON: ") + error.what(), pointer);
    }
}

bool is_rule_name(std::string_view text) {
    return !text.empty() && std::all_of(text.begin(), text.end(), is_name_char);
}

std::string_view SchemaCompiler::helper_suffix(Helper kind) {
    switch (kind) {
        case Helper::kWs: return "ws";
        case Helper::kChar: return "char";
        case Helper::kUnicodeEscape: return "uescape";
        case Helper::kString: return "string";
        case Helper::kInteger: return "integer";
        case Helper::kNumber: return "number";
        case Helper::kFraction: return "fraction";
        case Helper::kExponent: return "exponent";
        case Helper::kPositiveNumber: return "positive-number";
        case Helper::kBoolean: return "boolean";
        case Helper::kNull: return "null";
        case Helper::kValue: return "value";
        case Helper::kObject: return "object";
        case Helper::kArray: return "array";
        case Helper::kDate: return "date";
        case Helper::kTime: return "time";
        case Helper::kUuid: return "uuid";
    }
    return "";
}

std::string SchemaCompiler::helper(Helper kind) {
    const std::string name = prefix_ + "-" + std::string(helper_suffix(kind));
    if (helpers_.emplace(kind, name).second) define(name, helper_body(kind));  // the name first: value <-> object
    return name;
}

// NOTE: digit counts are bounded (16 integer digits, 1..16 fraction digits, 1..2 exponent digits) so that a model
// with random weights cannot write digits forever; 16 digits are about what a double holds exactly (2^53 has 16),
// and with two exponent digits every number is a finite double (nlohmann refuses 1e999 as an overflow). Whitespace
// is bounded the same way (llama.cpp's json-schema-to-grammar `space` rule).
std::string SchemaCompiler::helper_body(Helper kind) {
    switch (kind) {
        case Helper::kWs: return R"(| " " | "\n" [ \t]{0,20})";
        // Any code point JSON allows unescaped, or an escape; \u escapes of surrogates only as a valid pair, which
        // strict parsers (nlohmann among them) require.
        case Helper::kChar:
            return R"([\x20-\x21\x23-\x5B\x5D-\uD7FF\uE000-\U0010FFFF] | "\\" ( ["\\/bfnrt] | )" +
                   helper(Helper::kUnicodeEscape) + " )";
        case Helper::kUnicodeEscape:
            return R"("u" ( [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2} | )"
                   R"([dD] [89abAB] [0-9a-fA-F]{2} "\\u" [dD] [c-fC-F] [0-9a-fA-F]{2} ))";
        case Helper::kString: return "\"\\\"\" " + helper(Helper::kChar) + "* \"\\\"\"";
        case Helper::kInteger: return R"("-"? ( "0" | [1-9] [0-9]{0,15} ))";
        case Helper::kFraction: return R"("." [0-9]{1,16})";
        case Helper::kExponent: return R"([eE] [+\-]? [0-9]{1,2})";
        case Helper::kNumber:
            return R"("-"? ( "0" | [1-9] [0-9]{0,15} ) )" + helper(Helper::kFraction) + "? " +
                   helper(Helper::kExponent) + "?";
        // Above zero: a non-zero integer part, or "0." then a fraction with a non-zero digit (the first non-zero
        // digit is where the leading zeros end, so each number parses one way).
        case Helper::kPositiveNumber:
            return "( [1-9] [0-9]{0,15} " + helper(Helper::kFraction) + R"(? | "0." "0"{0,15} [1-9] [0-9]{0,15} ) )" +
                   helper(Helper::kExponent) + "?";
        case Helper::kBoolean: return R"("true" | "false")";
        case Helper::kNull: return R"("null")";
        case Helper::kValue:
            return helper(Helper::kObject) + " | " + helper(Helper::kArray) + " | " + helper(Helper::kString) + " | " +
                   helper(Helper::kNumber) + " | " + helper(Helper::kBoolean) + " | " + helper(Helper::kNull);
        case Helper::kObject: {
            const std::string ws = helper(Helper::kWs);
            const std::string pair =
                helper(Helper::kString) + " " + ws + " \":\" " + ws + " " + helper(Helper::kValue) + " " + ws;
            return "\"{\" " + ws + " ( " + pair + " ( \",\" " + ws + " " + pair + " )* )? \"}\"";
        }
        case Helper::kArray: {
            const std::string ws = helper(Helper::kWs);
            const std::string item = helper(Helper::kValue) + " " + ws;
            return "\"[\" " + ws + " ( " + item + " ( \",\" " + ws + " " + item + " )* )? \"]\"";
        }
        case Helper::kDate:
        case Helper::kTime:
        case Helper::kUuid: return format_body(kind);
    }
    return "";
}

std::string SchemaCompiler::format_body(Helper kind) {
    switch (kind) {
        // RFC 3339 full-date and full-time (JSON Schema's date, time, date-time). Days follow the month, and
        // February 29 the Gregorian leap years: the last two digits a multiple of 4 but not 00, or a century whose
        // first two digits are a multiple of 4 (validators such as ajv-formats check both).
        case Helper::kDate:
            return R"([0-9]{4} "-" ( ( "0" [13578] | "1" [02] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] ) | )"
                   R"(( "0" [469] | "11" ) "-" ( "0" [1-9] | [12] [0-9] | "30" ) | "02-" ( "0" [1-9] | "1" [0-9] | )"
                   R"("2" [0-8] ) ) | ( [0-9]{2} ( "0" [48] | [2468] [048] | [13579] [26] ) | ( [02468] [048] | )"
                   R"([13579] [26] ) "00" ) "-02-29")";
        // A leap second (:60) only as 23:59:60 UTC, the one minute that may have it (RFC 3339, as ajv-formats): a
        // grammar cannot subtract an offset, so other spellings of that instant are left out.
        case Helper::kTime:
            return R"(( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,9} )? )"
                   R"(( "Z" | [+\-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ) | )"
                   R"("23:59:60" ( "." [0-9]{1,9} )? ( "Z" | [+\-] "00:00" ))";
        case Helper::kUuid:
            return R"([0-9a-fA-F]{8} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{4} "-" [0-9a-fA-F]{12})";
        default: return "";
    }
}

std::string SchemaCompiler::grammar_text(const std::string& body) const {
    std::string text = prefix_ + " ::= " + body + "\n";
    for (const auto& [name, rule_body] : rules_) text += name + " ::= " + rule_body + "\n";
    return text + foreign_text_;
}

std::string SchemaCompiler::name_from(const std::string& base, std::string_view text) {
    constexpr size_t kMaxNamePart = 32;
    std::string part;
    for (char c : text.substr(0, kMaxNamePart)) part += is_name_char(c) ? c : '-';
    return base + "-" + (part.empty() ? "x" : part);
}

bool SchemaCompiler::reserved_for_foreign(const std::string& name) const {
    for (const std::string& foreign : foreign_prefixes_) {
        if (name.size() <= foreign.size() + 1 || name.compare(0, foreign.size() + 1, foreign + "-") != 0) continue;
        if (all_digits(std::string_view(name).substr(foreign.size() + 1))) return true;
    }
    return false;
}

std::string SchemaCompiler::fresh_name(const std::string& base) {
    std::string name = base;
    // `_N`, not `-N`: regex_to_gbnf names its helpers `-N`.
    for (int suffix = 2; used_names_.count(name) != 0 || reserved_for_foreign(name); ++suffix) {
        name = base + "_" + std::to_string(suffix);
    }
    used_names_.insert(name);
    return name;
}

std::string SchemaCompiler::fresh_foreign_name(const std::string& base) {
    std::string name = fresh_name(base);
    const auto taken_by_helpers = [&](const std::string& candidate) {
        const auto begin = used_names_.lower_bound(candidate + "-");
        for (auto it = begin; it != used_names_.end() && it->rfind(candidate + "-", 0) == 0; ++it) {
            if (all_digits(std::string_view(*it).substr(candidate.size() + 1))) return true;
        }
        return false;
    };
    while (taken_by_helpers(name)) name = fresh_name(base);
    foreign_prefixes_.insert(name);
    return name;
}

void SchemaCompiler::define(const std::string& name, std::string body) { rules_.emplace_back(name, std::move(body)); }

}  // namespace tern::grammar::json_schema

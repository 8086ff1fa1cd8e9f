// Objects: named properties in schema order with the commas right for every choice of optional ones, and extra
// properties whose keys are none of the named ones.
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "grammar/json_schema_compiler.h"
#include "grammar/utf8_ranges.h"

namespace tern::grammar::json_schema {
namespace {

struct Member {
    std::string key;
    std::string pair;  // `"key" ws ":" ws value ws`
    bool required = false;
};

// What an object schema says, read and checked.
struct ObjectShape {
    const Json* properties = nullptr;  // an object, or null when absent
    std::vector<std::string> required;
    std::optional<Json> extra;  // the schema of additional properties; none when they are not allowed
};

Result<ObjectShape> read_object_shape(const Json& schema, const std::string& pointer) {
    ObjectShape shape;
    if (const auto properties = schema.find("properties"); properties != schema.end()) {
        if (!properties->is_object()) return schema_error("'properties' must be an object", pointer);
        shape.properties = &*properties;
    }
    if (const auto required = schema.find("required"); required != schema.end()) {
        if (!required->is_array()) return schema_error("'required' must be an array of strings", pointer);
        for (const Json& key : *required) {
            if (!key.is_string()) return schema_error("'required' must be an array of strings", pointer);
            if (std::find(shape.required.begin(), shape.required.end(), key) == shape.required.end()) {
                shape.required.push_back(key.get<std::string>());
            }
        }
    }
    const auto additional = schema.find("additionalProperties");
    if (additional != schema.end() && !additional->is_boolean() && !additional->is_object()) {
        return schema_error("'additionalProperties' must be a boolean or a schema", pointer);
    }
    // NOTE: absent additionalProperties means no extra properties (OpenAI strict mode, XGrammar), a subset of the
    // schema that keeps generation short; but an object schema naming no property at all means "any object", as
    // free-form tool arguments ({"type": "object"}) intend.
    if (additional == schema.end()) {
        if (shape.properties == nullptr && shape.required.empty()) shape.extra = Json(true);
    } else if (*additional != Json(false)) {
        shape.extra = *additional;
    }
    return shape;
}

// One unit of a JSON string's spelling: an escape sequence or one UTF-8 character.
std::vector<std::string> spelling_units(const std::string& spelled) {
    std::vector<std::string> units;
    for (size_t pos = 0; pos < spelled.size();) {
        size_t length = 1;
        if (spelled[pos] == '\\') {
            length = spelled[pos + 1] == 'u' ? 6 : 2;
        } else {
            uint32_t code_point = 0;
            size_t end = pos;
            decode_utf8(spelled, end, code_point);
            length = std::max<size_t>(end - pos, 1);  // dump_compact wrote valid UTF-8; never loop on a bad byte
        }
        units.push_back(spelled.substr(pos, length));
        pos += length;
    }
    return units;
}

// A trie over the spelled keys, one node per prefix.
struct KeyTrie {
    struct Node {
        std::map<std::string, size_t> children;  // unit -> node
        bool is_key = false;
    };
    std::vector<Node> nodes{1};

    void add(const std::vector<std::string>& units) {
        size_t node_idx = 0;
        for (const std::string& unit : units) {
            const auto [child, inserted] = nodes[node_idx].children.emplace(unit, nodes.size());
            const size_t child_idx = child->second;  // read before emplace_back moves the nodes
            if (inserted) nodes.emplace_back();
            node_idx = child_idx;
        }
        nodes[node_idx].is_key = true;
    }
};

// The character a JSON escape unit (\n, \u001f, ...) stands for.
uint32_t escaped_code_point(const std::string& unit) {
    switch (unit[1]) {
        case 'b': return 0x08;
        case 'f': return 0x0C;
        case 'n': return 0x0A;
        case 'r': return 0x0D;
        case 't': return 0x09;
        case 'u': return static_cast<uint32_t>(std::stoul(unit.substr(2, 4), nullptr, 16));
        default: return static_cast<uint8_t>(unit[1]);  // \" \\ \/
    }
}

// `u00XX` for the control characters (U+0000..U+001F) other than `excluded`, hex letters in either case; "" when
// none is left.
std::string control_escapes(const std::set<uint32_t>& excluded) {
    if (excluded.empty()) return R"(( "u00" [01] [0-9a-fA-F] ))";
    constexpr std::string_view kHex = "0123456789abcdef";
    std::vector<std::string> alternatives;
    for (uint32_t code_point = 0; code_point < 0x20; ++code_point) {
        if (excluded.count(code_point) != 0) continue;
        const char low = kHex[code_point & 0xF];
        const std::string low_text = low >= 'a' ? std::string("[") + low + static_cast<char>(low - 'a' + 'A') + "]"
                                                : std::string("\"") + low + "\"";
        alternatives.push_back(std::string("\"u00") + (code_point < 0x10 ? '0' : '1') + "\" " + low_text);
    }
    return alternatives.empty() ? "" : any_of_texts(alternatives);
}

// Any string character but those the units in `excluded` stand for, in any spelling: the keys of extra properties
// must differ from the named ones once decoded (JSON.parse keeps the last of two equal keys, so {"a": 1,
// "\u0061": true} would give a named property the extra value). A \u escape is allowed only for control
// characters, which have no raw spelling; any other character written so would be a second spelling of it.
std::string other_unit(const std::map<std::string, size_t>& excluded) {
    std::vector<std::pair<uint32_t, uint32_t>> raw = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, 0x10FFFF}};
    std::string simple_escapes = "\"\\/bfnrt";
    std::set<uint32_t> excluded_controls;
    for (const auto& [unit, node_idx] : excluded) {
        uint32_t code_point = 0;
        if (unit[0] == '\\') {
            code_point = escaped_code_point(unit);
        } else {
            size_t end = 0;
            decode_utf8(unit, end, code_point);
        }
        if (code_point < 0x20) excluded_controls.insert(code_point);
        for (const char letter : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) {
            if (escaped_code_point(std::string("\\") + letter) == code_point) std::erase(simple_escapes, letter);
        }
        CodePointRanges kept;
        for (const auto& [low, high] : raw) {
            if (code_point < low || code_point > high) {
                kept.emplace_back(low, high);
                continue;
            }
            if (code_point > low) kept.emplace_back(low, code_point - 1);
            if (code_point < high) kept.emplace_back(code_point + 1, high);
        }
        raw = kept;
    }
    std::vector<std::string> escapes;
    std::vector<std::pair<uint32_t, uint32_t>> escape_letters;
    for (char letter : simple_escapes) escape_letters.emplace_back(letter, letter);
    if (!escape_letters.empty()) escapes.push_back(gbnf_class(escape_letters));
    if (std::string controls = control_escapes(excluded_controls); !controls.empty()) escapes.push_back(controls);
    std::vector<std::string> alternatives = {gbnf_class(raw)};
    if (!escapes.empty()) alternatives.push_back("\"\\\\\" " + any_of_texts(escapes));
    return any_of_texts(alternatives);
}

// A JSON string (with its quotes) that is not the canonical spelling of any of `keys`: the keys of extra
// properties, so that a named property cannot come twice. One rule per trie node: "the key so far is this prefix".
Result<std::string> key_other_than(SchemaCompiler& compiler, const std::vector<std::string>& keys,
                                   const std::string& name, const std::string& pointer) {
    if (keys.empty()) return compiler.helper(Helper::kString);
    KeyTrie trie;
    for (const std::string& key : keys) {
        TERN_ASSIGN_OR_RETURN(const std::string spelled, dump_compact(Json(key), pointer));
        trie.add(spelling_units(spelled.substr(1, spelled.size() - 2)));
    }
    std::vector<std::string> node_rules;
    for (size_t node_idx = 0; node_idx < trie.nodes.size(); ++node_idx) {
        node_rules.push_back(
            compiler.fresh_name(name + "-key" + (node_idx == 0 ? "" : "-n" + std::to_string(node_idx))));
    }
    const std::string rest = compiler.helper(Helper::kChar) + "* \"\\\"\"";
    for (size_t node_idx = 0; node_idx < trie.nodes.size(); ++node_idx) {
        const KeyTrie::Node& node = trie.nodes[node_idx];
        std::vector<std::string> alternatives;
        for (const auto& [unit, child_idx] : node.children) {
            alternatives.push_back(gbnf_literal(unit) + " " + node_rules[child_idx]);
        }
        alternatives.push_back(other_unit(node.children) + " " + rest);
        if (!node.is_key) alternatives.push_back("\"\\\"\"");
        std::string body;
        for (const std::string& alternative : alternatives) body += (body.empty() ? "" : " | ") + alternative;
        compiler.define(node_rules[node_idx], body);
    }
    const std::string key_rule = compiler.fresh_name(name + "-extra-key");
    compiler.define(key_rule, "\"\\\"\" " + node_rules[0]);
    return key_rule;
}

// The members in order, each written `"key" ws ":" ws value ws`, with nothing before the first and a comma before
// every other; extra pairs (if `extra` is not empty) after the named ones.
//   tails[i]: members i.. when something was written before them (each optional one as ( "," pair )?);
//   first(j): members j.. when nothing was written yet: an optional member j either comes (then tails[j+1]) or
//             not (then first(j+1)), so every choice of optional members has exactly one spelling.
// Tails used by both chains (tails[2..L+1] after L leading optional members) become rules, which keeps the text
// linear in the number of members.
std::string member_sequence(SchemaCompiler& compiler, const std::vector<Member>& members, const std::string& extra,
                            const std::string& name) {
    const std::string comma = "\",\" " + compiler.helper(Helper::kWs) + " ";
    const size_t num_members = members.size();
    size_t num_leading_optional = 0;
    while (num_leading_optional < num_members && !members[num_leading_optional].required) ++num_leading_optional;

    std::vector<std::string> tails(num_members + 1);
    if (!extra.empty()) tails[num_members] = "( " + comma + extra + " )*";
    for (size_t member_idx = num_members; member_idx-- > 1;) {
        const Member& member = members[member_idx];
        std::string text = member.required ? comma + member.pair : "( " + comma + member.pair + " )?";
        if (!tails[member_idx + 1].empty()) text += " " + tails[member_idx + 1];
        if (member_idx >= 2 && member_idx <= num_leading_optional + 1) {
            const std::string rule = compiler.fresh_name(name + "-tail" + std::to_string(member_idx));
            compiler.define(rule, text);
            text = rule;
        }
        tails[member_idx] = text;
    }

    std::string first;  // first(j), built from the last j down
    size_t first_idx = num_leading_optional;
    if (first_idx == num_members) {
        if (!extra.empty()) first = "( " + extra + " " + tails[num_members] + " )?";
    } else {
        first = members[first_idx].pair + (tails[first_idx + 1].empty() ? "" : " " + tails[first_idx + 1]);
    }
    while (first_idx-- > 0) {
        const std::string taken =
            members[first_idx].pair + (tails[first_idx + 1].empty() ? "" : " " + tails[first_idx + 1]);
        first = first.empty() ? "( " + taken + " )?" : "( " + taken + " | " + first + " )";
    }
    return first;
}

// `"key" ws ":" ws value ws`
Result<std::string> pair_text(SchemaCompiler& compiler, const std::string& key, const std::string& value,
                              const std::string& pointer) {
    TERN_ASSIGN_OR_RETURN(const std::string spelled, dump_compact(Json(key), pointer));
    const std::string ws = compiler.helper(Helper::kWs);
    return gbnf_literal(spelled) + " " + ws + " \":\" " + ws + " " + value + " " + ws;
}

// The members an object may have, in order: `properties`, then required keys that only additionalProperties
// allows. Keys of properties whose schema is false go to `unusable_keys`.
Result<std::vector<Member>> object_members(SchemaCompiler& compiler, const ObjectShape& shape,
                                           const std::string& extra_value, const std::string& pointer,
                                           const std::string& name, std::vector<std::string>& unusable_keys) {
    std::vector<Member> members;
    const auto is_required = [&](const std::string& key) {
        return std::find(shape.required.begin(), shape.required.end(), key) != shape.required.end();
    };
    for (const auto& [key, subschema] : shape.properties->items()) {
        const std::string property_pointer = child_pointer(child_pointer(pointer, "properties"), key);
        if (subschema == Json(false)) {
            if (is_required(key)) {
                return schema_error("required property '" + key + "' has the schema false: no object is allowed",
                                    property_pointer);
            }
            unusable_keys.push_back(key);
            continue;
        }
        TERN_ASSIGN_OR_RETURN(const std::string value, compiler.compile_to_rule(subschema, property_pointer,
                                                                                SchemaCompiler::name_from(name, key)));
        TERN_ASSIGN_OR_RETURN(std::string pair, pair_text(compiler, key, value, pointer));
        members.push_back({key, std::move(pair), is_required(key)});
    }
    for (const std::string& key : shape.required) {
        if (shape.properties->contains(key)) continue;
        if (!shape.extra) {
            return schema_error("required property '" + key +
                                    "' is not in 'properties' and additionalProperties is "
                                    "false or absent, so no object is allowed: add it to 'properties'",
                                pointer);
        }
        TERN_ASSIGN_OR_RETURN(std::string pair, pair_text(compiler, key, extra_value, pointer));
        members.push_back({key, std::move(pair), true});
    }
    return members;
}

}  // namespace

Result<std::string> SchemaCompiler::compile_object(const Json& schema, const std::string& pointer,
                                                   const std::string& name) {
    TERN_ASSIGN_OR_RETURN(ObjectShape shape, read_object_shape(schema, pointer));
    const Json no_properties = Json::object();
    if (shape.properties == nullptr) shape.properties = &no_properties;
    std::string extra_value;
    if (shape.extra) {
        TERN_ASSIGN_OR_RETURN(extra_value, compile_to_rule(*shape.extra, child_pointer(pointer, "additionalProperties"),
                                                           name + "-additional"));
    }
    std::vector<std::string> excluded_keys;
    TERN_ASSIGN_OR_RETURN(const std::vector<Member> members,
                          object_members(*this, shape, extra_value, pointer, name, excluded_keys));
    const std::string ws = helper(Helper::kWs);
    std::string extra_pair;
    if (shape.extra) {
        for (const Member& member : members) excluded_keys.push_back(member.key);
        TERN_ASSIGN_OR_RETURN(const std::string key_rule, key_other_than(*this, excluded_keys, name, pointer));
        extra_pair = fresh_name(name + "-extra");
        define(extra_pair, key_rule + " " + ws + " \":\" " + ws + " " + extra_value + " " + ws);
    }
    const std::string sequence = member_sequence(*this, members, extra_pair, name);
    return "\"{\" " + ws + (sequence.empty() ? "" : " " + sequence) + " \"}\"";
}

}  // namespace tern::grammar::json_schema

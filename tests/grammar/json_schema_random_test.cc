// Randomized checks of json_schema_to_gbnf: integer ranges against plain arithmetic, and random walks through the
// matcher (random allowed bytes until the grammar may end) whose documents must parse and satisfy the schema
// according to a small validator written separately here.
#include <gtest/gtest.h>

#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/matcher.h"

namespace tern::grammar {
namespace {

using nlohmann::ordered_json;

Grammar compile_or_die(const ordered_json& schema) {
    const Result<std::string> text = json_schema_to_gbnf(schema);
    EXPECT_TRUE(text.is_ok()) << text.status().message() << "\nschema: " << schema.dump();
    if (!text.is_ok()) return parse_gbnf("root ::= \"\\x00never\"").value();
    Result<Grammar> grammar = parse_gbnf(text.value());
    EXPECT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << text.value();
    return grammar.is_ok() ? std::move(grammar).value() : parse_gbnf("root ::= \"\\x00never\"").value();
}

size_t num_digits(int64_t value) {
    const std::string text = std::to_string(value);
    return text.size() - (value < 0 ? 1 : 0);
}

// What the grammar promises for an integer bounded on zero, one or two sides: exactly the range, and without an
// upper (lower) bound at most 16 digits, or as many as the nearest bound has.
bool integer_expected(int64_t value, std::optional<int64_t> min, std::optional<int64_t> max) {
    if ((min && value < *min) || (max && value > *max)) return false;
    if (value >= 0 && !max)
        return num_digits(value) <= std::max<size_t>(16, min ? num_digits(std::max<int64_t>(*min, 0)) : 1);
    if (value < 0 && !min) return num_digits(value) <= std::max<size_t>(16, max && *max < 0 ? num_digits(*max) : 1);
    return true;
}

int64_t random_bound(std::mt19937_64& rng) {
    const int scale = std::uniform_int_distribution<int>(0, 18)(rng);
    int64_t limit = 1;
    for (int step = 0; step < scale; ++step) limit *= 10;
    int64_t value = std::uniform_int_distribution<int64_t>(-limit, limit)(rng);
    // Often a bound sits right on a digit-count boundary.
    if (rng() % 4 == 0) value = (rng() % 2 ? limit : limit - 1) * (rng() % 2 ? 1 : -1);
    return value;
}

std::vector<int64_t> probe_values(std::optional<int64_t> min, std::optional<int64_t> max, std::mt19937_64& rng) {
    std::vector<int64_t> values;
    const auto around = [&](int64_t center) {
        for (int64_t offset = -50; offset <= 50; ++offset) {
            if ((offset < 0 && center < INT64_MIN + 60) || (offset > 0 && center > INT64_MAX - 60)) continue;
            values.push_back(center + offset);
        }
    };
    if (min && max && *max - *min <= 2000) {
        for (int64_t value = *min - 50; value <= *max + 50; ++value) values.push_back(value);
    } else {
        around(min.value_or(0));
        around(max.value_or(0));
        for (int sample = 0; sample < 100; ++sample) values.push_back(random_bound(rng));
    }
    int64_t power = 1;
    for (int exponent = 0; exponent <= 18; ++exponent) {
        for (int64_t value : {power, power - 1, -power, 1 - power}) values.push_back(value);
        if (exponent < 18) power *= 10;
    }
    return values;
}

TEST(JsonSchemaRandom, IntegerRangesAcceptExactlyTheRange) {
    std::mt19937_64 rng(20240607);
    for (int trial = 0; trial < 300; ++trial) {
        int64_t low = random_bound(rng);
        int64_t high = rng() % 3 == 0 ? low + static_cast<int64_t>(rng() % 300) : random_bound(rng);
        if (low > high) std::swap(low, high);
        // The exclusive neighbour of a bound at 10^18 would pass the limit, which is refused.
        if (std::max(std::abs(low), std::abs(high)) >= 1000000000000000000) continue;
        const std::optional<int64_t> min = rng() % 8 == 0 ? std::nullopt : std::optional<int64_t>(low);
        const std::optional<int64_t> max = rng() % 8 == 0 ? std::nullopt : std::optional<int64_t>(high);
        ordered_json schema = {{"type", "integer"}};
        // Exclusive bounds are the neighbouring inclusive ones.
        if (min) schema[rng() % 2 ? "minimum" : "exclusiveMinimum"] = 0;
        if (max) schema[rng() % 2 ? "maximum" : "exclusiveMaximum"] = 0;
        if (schema.contains("minimum")) schema["minimum"] = *min;
        if (schema.contains("exclusiveMinimum")) schema["exclusiveMinimum"] = *min - 1;
        if (schema.contains("maximum")) schema["maximum"] = *max;
        if (schema.contains("exclusiveMaximum")) schema["exclusiveMaximum"] = *max + 1;
        const Grammar grammar = compile_or_die(schema);
        for (int64_t value : probe_values(min, max, rng)) {
            ASSERT_EQ(matches(grammar, std::to_string(value)), integer_expected(value, min, max))
                << value << " schema: " << schema.dump();
        }
    }
}

// --- A small validator for the keywords the random-walk schemas use. ---

std::string validate(const ordered_json& value, const ordered_json& schema, const ordered_json& root);

size_t num_code_points(const std::string& text) {
    return std::count_if(text.begin(), text.end(),
                         [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; });
}

bool has_type(const ordered_json& value, const std::string& type) {
    if (type == "integer") return value.is_number_integer();
    if (type == "number") return value.is_number();
    if (type == "string") return value.is_string();
    if (type == "boolean") return value.is_boolean();
    if (type == "null") return value.is_null();
    if (type == "object") return value.is_object();
    return value.is_array();
}

std::string validate_object(const ordered_json& value, const ordered_json& schema, const ordered_json& root) {
    const ordered_json properties = schema.value("properties", ordered_json::object());
    for (const auto& key : schema.value("required", ordered_json::array())) {
        if (!value.contains(key.get<std::string>())) return "missing " + key.dump();
    }
    const bool closed = schema.contains("properties") && !schema.contains("additionalProperties");
    const ordered_json extra = closed ? ordered_json(false) : schema.value("additionalProperties", ordered_json(true));
    std::vector<std::string> order;
    for (const auto& [key, property] : properties.items()) order.push_back(key);
    size_t last_named = 0;
    bool extras_began = false;
    for (const auto& [key, item] : value.items()) {
        const auto named = std::find(order.begin(), order.end(), key);
        if (named == order.end()) {
            if (extra == ordered_json(false)) return "extra property " + key;
            extras_began = true;
            if (std::string error = validate(item, extra, root); !error.empty()) return key + ": " + error;
            continue;
        }
        const size_t named_idx = static_cast<size_t>(named - order.begin());
        if (extras_began || named_idx < last_named) return "property " + key + " out of order";
        last_named = named_idx;
        if (std::string error = validate(item, properties[key], root); !error.empty()) return key + ": " + error;
    }
    return "";
}

std::string validate_array(const ordered_json& value, const ordered_json& schema, const ordered_json& root) {
    if (value.size() < schema.value("minItems", 0u) || value.size() > schema.value("maxItems", 1000000u)) {
        return "item count " + std::to_string(value.size());
    }
    const ordered_json prefix = schema.value("prefixItems", ordered_json::array());
    for (size_t item_idx = 0; item_idx < value.size(); ++item_idx) {
        const ordered_json& item_schema =
            item_idx < prefix.size() ? prefix[item_idx] : schema.value("items", ordered_json(true));
        if (std::string error = validate(value[item_idx], item_schema, root); !error.empty()) {
            return "item " + std::to_string(item_idx) + ": " + error;
        }
    }
    return "";
}

std::string validate_scalar(const ordered_json& value, const ordered_json& schema) {
    if (value.is_string()) {
        const std::string text = value.get<std::string>();
        const size_t length = num_code_points(text);
        if (length < schema.value("minLength", 0u) || length > schema.value("maxLength", 1000000u)) {
            return "length " + std::to_string(length);
        }
        if (schema.contains("pattern") && !std::regex_search(text, std::regex(schema["pattern"].get<std::string>()))) {
            return "pattern";
        }
        if (schema.value("format", "") == "date" && !std::regex_match(text, std::regex(R"(\d{4}-\d\d-\d\d)")))
            return "date";
    }
    if (value.is_number()) {
        const double number = value.get<double>();
        if (schema.contains("minimum") && number < schema["minimum"].get<double>()) return "below minimum";
        if (schema.contains("maximum") && number > schema["maximum"].get<double>()) return "above maximum";
        if (schema.contains("exclusiveMinimum") && number <= schema["exclusiveMinimum"].get<double>())
            return "not above";
        if (schema.contains("exclusiveMaximum") && number >= schema["exclusiveMaximum"].get<double>())
            return "not below";
    }
    return "";
}

std::string validate(const ordered_json& value, const ordered_json& schema, const ordered_json& root) {
    if (schema.is_boolean()) return schema.get<bool>() ? "" : "schema false";
    if (schema.contains("$ref")) {
        const std::string target = schema["$ref"];
        return validate(value, target == "#" ? root : root.at(ordered_json::json_pointer(target.substr(1))), root);
    }
    if (schema.contains("anyOf")) {
        for (const ordered_json& alternative : schema["anyOf"]) {
            if (validate(value, alternative, root).empty()) return "";
        }
        return "no anyOf alternative";
    }
    if (schema.contains("const") && value != schema["const"]) return "not the const";
    if (schema.contains("enum") &&
        std::find(schema["enum"].begin(), schema["enum"].end(), value) == schema["enum"].end()) {
        return "not in enum";
    }
    if (schema.contains("type")) {
        const ordered_json types = schema["type"].is_array() ? schema["type"] : ordered_json::array({schema["type"]});
        const bool typed =
            std::any_of(types.begin(), types.end(), [&](const ordered_json& type) { return has_type(value, type); });
        if (!typed) return "type " + std::string(value.type_name()) + " is not " + types.dump();
    }
    if (value.is_object()) return validate_object(value, schema, root);
    if (value.is_array()) return validate_array(value, schema, root);
    return validate_scalar(value, schema);
}

// --- Random walks through the matcher. ---

// A random document of the grammar, or none when it grew past `max_bytes`. Picks printable ASCII mostly, other
// bytes (UTF-8) sometimes, and leans toward closing bytes and ending as the text grows, so that walks finish.
std::optional<std::string> random_document(const Grammar& grammar, std::mt19937_64& rng, size_t max_bytes) {
    Matcher matcher(grammar);
    std::string text;
    std::uniform_real_distribution<double> chance(0.0, 1.0);
    while (true) {
        const double pressure = std::min(0.95, static_cast<double>(text.size()) / 150.0);
        if (matcher.can_end() && chance(rng) < 0.2 + pressure) return text;
        const ByteSet next = matcher.next_bytes();
        EXPECT_TRUE(next.any() || matcher.can_end()) << "dead end after: " << text;
        if (next.none() || text.size() >= max_bytes)
            return next.none() ? std::optional<std::string>(text) : std::nullopt;
        std::vector<uint8_t> closers, printable, all;
        for (int byte = 0; byte < 256; ++byte) {
            if (!next[byte]) continue;
            all.push_back(static_cast<uint8_t>(byte));
            if (byte == '"' || byte == '}' || byte == ']') closers.push_back(static_cast<uint8_t>(byte));
            if (byte >= 0x20 && byte < 0x7F && byte != ' ' && byte != '\\')
                printable.push_back(static_cast<uint8_t>(byte));
        }
        const std::vector<uint8_t>& pool = !closers.empty() && chance(rng) < pressure ? closers
                                           : !printable.empty() && chance(rng) < 0.9  ? printable
                                                                                      : all;
        const uint8_t byte = pool[rng() % pool.size()];
        EXPECT_TRUE(matcher.accept_byte(byte)) << "next_bytes offered " << int(byte) << " after: " << text;
        text += static_cast<char>(byte);
    }
}

// Every key named in some `properties` of `schema`.
void collect_named_keys(const ordered_json& schema, std::set<std::string>& keys) {
    if (!schema.is_structured()) return;
    if (schema.is_object() && schema.contains("properties") && schema["properties"].is_object()) {
        for (const auto& [key, property] : schema["properties"].items()) keys.insert(key);
    }
    for (const auto& child : schema) collect_named_keys(child, keys);
}

// Parses `text`, checking that no object repeats a key of `named_keys` (nlohmann keeps only the last of duplicates,
// so it is checked while parsing). Extra properties may repeat each other's keys: a grammar cannot remember them.
ordered_json parse_checking_named_keys(const std::string& text, const std::set<std::string>& named_keys) {
    std::vector<std::set<std::string>> open_objects;
    return ordered_json::parse(text, [&](int, ordered_json::parse_event_t event, ordered_json& parsed) {
        if (event == ordered_json::parse_event_t::object_start) open_objects.emplace_back();
        if (event == ordered_json::parse_event_t::object_end) open_objects.pop_back();
        if (event == ordered_json::parse_event_t::key && named_keys.count(parsed.get<std::string>()) != 0) {
            EXPECT_TRUE(open_objects.back().insert(parsed.get<std::string>()).second) << "duplicate key in " << text;
        }
        return true;
    });
}

void expect_random_documents_valid(const ordered_json& schema, uint64_t seed) {
    const Grammar grammar = compile_or_die(schema);
    std::mt19937_64 rng(seed);
    std::set<std::string> named_keys;
    collect_named_keys(schema, named_keys);
    int num_documents = 0;
    for (int walk = 0; walk < 150 && !testing::Test::HasFailure(); ++walk) {
        const std::optional<std::string> document = random_document(grammar, rng, 3000);
        if (!document) continue;
        ++num_documents;
        ordered_json value;
        try {
            value = parse_checking_named_keys(*document, named_keys);
        } catch (const ordered_json::exception& error) {
            ADD_FAILURE() << "does not parse: " << *document << "\n" << error.what();
            continue;
        }
        EXPECT_EQ(validate(value, schema, schema), "") << *document << "\nschema: " << schema.dump();
    }
    EXPECT_GE(num_documents, 75) << "too few walks finished for " << schema.dump();
}

TEST(JsonSchemaRandom, WalksOfAFlatObject) {
    expect_random_documents_valid(ordered_json::parse(R"({"type": "object", "properties": {
        "id": {"type": "integer", "minimum": -20, "exclusiveMaximum": 1000},
        "name": {"type": "string", "minLength": 1, "maxLength": 8},
        "score": {"type": "number", "exclusiveMinimum": 0},
        "debt": {"type": "number", "maximum": 0},
        "kind": {"enum": ["a", "b", 3, null]},
        "ok": {"type": ["boolean", "null"]},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 3}, "minItems": 1, "maxItems": 3}},
        "required": ["name", "ok"]})"),
                                  1);
}

TEST(JsonSchemaRandom, WalksWithAdditionalPropertiesAndNesting) {
    expect_random_documents_valid(ordered_json::parse(R"({"type": "object", "properties": {
        "a": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["y"]},
        "ab": {"type": "null"}},
        "additionalProperties": {"type": "integer", "minimum": 0, "maximum": 9}})"),
                                  2);
}

TEST(JsonSchemaRandom, WalksOfRecursiveSchemas) {
    expect_random_documents_valid(ordered_json::parse(R"({"$defs": {"tree": {"type": "object", "properties": {
        "v": {"type": "integer"}, "kids": {"type": "array", "items": {"$ref": "#/$defs/tree"}, "maxItems": 2}},
        "required": ["v"]}}, "anyOf": [{"$ref": "#/$defs/tree"}, {"type": "array", "items": {"$ref": "#"}}]})"),
                                  3);
}

TEST(JsonSchemaRandom, WalksOfTuplesPatternsAndFormats) {
    expect_random_documents_valid(ordered_json::parse(R"({"type": "array", "prefixItems": [
        {"type": "string", "pattern": "^[a-c]{2,4}-[0-9]?$"}, {"type": "string", "format": "date"},
        {"type": "string", "format": "uuid"}], "items": {"const": {"k": [1, "2"]}}, "minItems": 2, "maxItems": 5})"),
                                  4);
}

TEST(JsonSchemaRandom, WalksOfAnyValueAndAnyObject) {
    expect_random_documents_valid(ordered_json(true), 5);
    expect_random_documents_valid(ordered_json::parse(R"({"type": "object"})"), 6);
    const Grammar grammar = parse_gbnf(json_object_gbnf()).value();
    std::mt19937_64 rng(7);
    for (int walk = 0; walk < 100; ++walk) {
        const std::optional<std::string> document = random_document(grammar, rng, 3000);
        if (!document) continue;
        EXPECT_TRUE(ordered_json::accept(*document)) << *document;
        EXPECT_EQ(document->front(), '{') << *document;
    }
}

}  // namespace
}  // namespace tern::grammar

// Random JSON Schemas (random_constraints.h). Shapes stay inside the compiler's subset and inside what a validator
// and a JavaScript number agree on: integer bounds below 2^53, oneOf only over alternatives no value can match twice
// (the grammar compiles oneOf as anyOf), formats only those the compiler enforces (ajv-formats checks email and the
// others, which the compiler treats as annotations), pattern never beside a length bound.
#include <algorithm>
#include <array>
#include <string_view>

#include "random_constraints.h"

namespace tern::testing {
namespace {

using Json = nlohmann::ordered_json;

// Property names, some that JSON must escape or that are not ASCII.
constexpr std::array<std::string_view, 16> kNames = {"id",    "name",      "value", "count", "ok",  "tags",
                                                     "items", "kind",      "a",     "b",     "x_y", "camelCase",
                                                     "é",     "two words", "q\"t",  "日付"};
constexpr std::array<std::string_view, 10> kStrings = {"",   "a",       "hello world", "quo\"te", "back\\slash",
                                                       "\t", "ünïcödé", "日本",        "😀",       "line\nbreak"};
constexpr std::array<std::string_view, 4> kFormats = {"date", "time", "date-time", "uuid"};
constexpr std::array<std::string_view, 4> kZeroBounds = {"minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"};

class SchemaGenerator {
public:
    explicit SchemaGenerator(uint64_t seed) : rng_(seed) {}

    Json root() {
        Json schema;
        const int shape = uniform(0, 19);
        if (shape < 2) {
            schema = recursive();
        } else if (shape < 3) {
            schema = object(1);  // the root itself, through "#"
            schema["properties"]["self"] = {{"anyOf", Json::array({{{"$ref", "#"}}, {{"type", "null"}}})}};
        } else {
            schema = shape < 12 ? object(0) : any(0);
        }
        if (!defs_.empty()) schema["$defs"] = defs_;
        if (!definitions_.empty()) schema["definitions"] = definitions_;
        return schema;
    }

private:
    int uniform(int low, int high) { return std::uniform_int_distribution<int>(low, high)(rng_); }
    bool chance(double probability) { return std::bernoulli_distribution(probability)(rng_); }
    template <typename T, size_t N>
    T pick(const std::array<T, N>& options) {
        return options[static_cast<size_t>(uniform(0, static_cast<int>(N) - 1))];
    }

    Json any(int depth) {
        if (depth >= 3) return leaf();
        const int roll = uniform(0, 19);
        if (roll < 4) return object(depth);
        if (roll < 7) return array(depth);
        if (roll < 8) return nullable(depth);
        if (roll < 9) return {{"anyOf", alternatives(depth, uniform(2, 3))}};
        if (roll < 10) return one_of(depth);
        if (roll < 11) return reference(depth);
        if (roll < 12) return {{"allOf", Json::array({any(depth + 1)})}};
        return leaf();
    }

    Json leaf() {
        const int roll = uniform(0, 11);
        if (roll < 3) return string_schema();
        if (roll < 5) return integer_schema();
        if (roll < 6) return number_schema();
        if (roll < 7) return {{"type", "boolean"}};
        if (roll < 8) return {{"type", "null"}};
        if (roll < 10) return enum_schema();
        return {{"const", value(1)}};
    }

    Json alternatives(int depth, int count) {
        Json list = Json::array();
        for (int alternative_idx = 0; alternative_idx < count; ++alternative_idx) list.push_back(any(depth + 1));
        return list;
    }

    Json object(int depth) {
        Json schema = {{"type", "object"}};
        if (chance(0.05)) return schema;  // any object
        Json properties = Json::object();
        Json required = Json::array();
        for (int count = uniform(1, 5); count > 0; --count) {
            const std::string name(pick(kNames));
            if (properties.contains(name)) continue;
            properties[name] = any(depth + 1);
            if (chance(0.5)) required.push_back(name);
        }
        schema["properties"] = properties;
        if (!required.empty()) schema["required"] = required;
        const int extra = uniform(0, 19);
        if (extra < 3) schema["additionalProperties"] = false;
        if (extra == 3) schema["additionalProperties"] = true;
        if (extra == 4) schema["additionalProperties"] = leaf();
        return schema;
    }

    Json array(int depth) {
        Json schema = {{"type", "array"}};
        int min_items = uniform(0, 2);
        if (chance(0.25)) {  // a tuple
            Json prefix = alternatives(depth, uniform(1, 3));
            const int rest = uniform(0, 2);
            if (rest == 0) schema["items"] = false;
            if (rest == 1) schema["items"] = any(depth + 1);
            if (rest == 0) min_items = std::min<int>(min_items, static_cast<int>(prefix.size()));
            schema["prefixItems"] = prefix;
        } else {
            schema["items"] = any(depth + 1);
        }
        if (min_items > 0) schema["minItems"] = min_items;
        if (chance(0.7)) schema["maxItems"] = min_items + uniform(0, 3);
        return schema;
    }

    Json string_schema() {
        Json schema = {{"type", "string"}};
        switch (uniform(0, 5)) {
            case 0: break;
            case 1:
            case 2: {
                const int min_length = uniform(0, 3);
                if (min_length > 0 || chance(0.5)) schema["minLength"] = min_length;
                schema["maxLength"] = min_length + uniform(0, 8);
                break;
            }
            case 3: schema["pattern"] = random_regex(rng_); break;
            default: schema["format"] = std::string(pick(kFormats));
        }
        return schema;
    }

    // Bounds of 1 to 13 digits, inclusive or exclusive, one or both (exclusive ones at least 2 apart).
    Json integer_schema() {
        Json schema = {{"type", "integer"}};
        const int64_t scale = std::array<int64_t, 4>{10, 1000, 1000000, 1000000000000}[uniform(0, 3)];
        const int64_t low = std::uniform_int_distribution<int64_t>(-scale, scale)(rng_);
        const int64_t high = low + 2 + std::uniform_int_distribution<int64_t>(0, scale)(rng_);
        const int which = uniform(0, 3);
        if (which != 1) schema[chance(0.3) ? "exclusiveMinimum" : "minimum"] = low;
        if (which != 0) schema[chance(0.3) ? "exclusiveMaximum" : "maximum"] = high;
        return schema;
    }

    Json number_schema() {
        Json schema = {{"type", "number"}};
        if (chance(0.5)) schema[std::string(pick(kZeroBounds))] = 0;
        return schema;
    }

    Json enum_schema() {
        Json values = Json::array();
        for (int count = uniform(1, 5); count > 0; --count) {
            Json candidate = value(1);
            if (std::find(values.begin(), values.end(), candidate) == values.end()) values.push_back(candidate);
        }
        Json schema = {{"enum", values}};
        // A type beside the enum keeps only the values of that type (at least the first one's).
        if (chance(0.25)) schema["type"] = type_name(values[0]);
        return schema;
    }

    static std::string type_name(const Json& value) {
        if (value.is_string()) return "string";
        if (value.is_number_integer()) return "integer";
        if (value.is_number()) return "number";
        if (value.is_boolean()) return "boolean";
        if (value.is_null()) return "null";
        return value.is_object() ? "object" : "array";
    }

    Json value(int depth) {
        const int roll = uniform(0, depth < 3 ? 8 : 6);
        if (roll < 2) return std::string(pick(kStrings));
        if (roll < 3) return std::uniform_int_distribution<int64_t>(-1000000, 1000000)(rng_);
        if (roll < 4) return std::array<double, 5>{0.5, -2.25, 1e-7, 3.0, 123456.789}[uniform(0, 4)];
        if (roll < 5) return chance(0.5);
        if (roll < 6) return nullptr;
        if (roll < 7) return std::string(pick(kNames));
        if (roll < 8) {
            Json list = Json::array();
            for (int count = uniform(0, 2); count > 0; --count) list.push_back(value(depth + 1));
            return list;
        }
        Json object = Json::object();
        for (int count = uniform(0, 2); count > 0; --count) object[std::string(pick(kNames))] = value(depth + 1);
        return object;
    }

    // A type list: one type or two, null among them most of the time; the keywords of every listed type.
    Json nullable(int depth) {
        std::array<Json, 2> parts = {string_schema(), integer_schema()};
        Json schema = chance(0.5) ? parts[0] : (chance(0.5) ? parts[1] : object(depth));
        const std::string base = schema["type"].get<std::string>();
        if (base != "object" && chance(0.3)) {  // string and integer together, each with its bounds
            schema = parts[0];
            for (const auto& [key, bound] : parts[1].items()) schema[key] = bound;
            schema["type"] = Json::array({"string", "integer"});
            return schema;
        }
        schema["type"] = chance(0.5) ? Json::array({base, "null"}) : Json::array({"null", base});
        return schema;
    }

    // Alternatives of different JSON types (integer and number never together): no value matches two of them, so
    // oneOf means the same as the anyOf the grammar compiles it to.
    Json one_of(int depth) {
        std::array<int, 6> kinds = {0, 1, 2, 3, 4, 5};
        std::shuffle(kinds.begin(), kinds.end(), rng_);
        Json list = Json::array();
        for (int kind_idx = 0, count = uniform(2, 3); kind_idx < count; ++kind_idx) {
            switch (kinds[kind_idx]) {
                case 0: list.push_back(string_schema()); break;
                case 1: list.push_back(chance(0.5) ? integer_schema() : number_schema()); break;
                case 2: list.push_back({{"type", "boolean"}}); break;
                case 3: list.push_back({{"type", "null"}}); break;
                case 4: list.push_back(object(depth + 1)); break;
                default: list.push_back(array(depth + 1));
            }
        }
        return {{"oneOf", list}};
    }

    // A named schema under $defs (or the older definitions), sometimes one made before.
    Json reference(int depth) {
        const bool old_keyword = chance(0.2);
        Json& defs = old_keyword ? definitions_ : defs_;
        std::vector<std::string> finished;  // not those still being made: a reference to one would recurse
        for (const auto& [key, body] : defs.items()) {
            if (!body.is_null()) finished.push_back(key);
        }
        std::string name;
        if (!finished.empty() && chance(0.3)) {
            name = finished[static_cast<size_t>(uniform(0, static_cast<int>(finished.size()) - 1))];
        } else {
            name = "d" + std::to_string(defs.size());
            defs[name] = Json();  // reserved first: the body may add other definitions
            defs[name] = any(depth + 1);
        }
        return {{"$ref", std::string(old_keyword ? "#/definitions/" : "#/$defs/") + name}};
    }

    // Recursion that a random choice ends: each level goes on with a probability below one.
    Json recursive() {
        switch (uniform(0, 2)) {
            case 0:
                defs_["list"] = {
                    {"type", "object"},
                    {"properties",
                     {{"value", leaf()},
                      {"next", {{"anyOf", Json::array({{{"$ref", "#/$defs/list"}}, {{"type", "null"}}})}}}}},
                    {"required", Json::array({"value", "next"})}};
                return {{"$ref", "#/$defs/list"}};
            case 1:
                defs_["tree"] = {
                    {"type", "object"},
                    {"properties",
                     {{"label", {{"type", "string"}, {"maxLength", 4}}},
                      {"children", {{"type", "array"}, {"items", {{"$ref", "#/$defs/tree"}}}, {"maxItems", 2}}}}},
                    {"required", Json::array({"label"})},
                    {"additionalProperties", false}};
                return {{"type", "object"},
                        {"properties", {{"root", {{"$ref", "#/$defs/tree"}}}}},
                        {"required", Json::array({"root"})}};
            default:
                defs_["expr"] = {
                    {"anyOf",
                     Json::array({{{"type", "integer"}, {"minimum", 0}, {"maximum", 9}},
                                  {{"type", "array"},
                                   {"prefixItems", Json::array({{{"const", "neg"}}, {{"$ref", "#/$defs/expr"}}})},
                                   {"items", false},
                                   {"minItems", 2}}})}};
                return {{"$ref", "#/$defs/expr"}};
        }
    }

    std::mt19937_64 rng_;
    Json defs_ = Json::object();
    Json definitions_ = Json::object();
};

}  // namespace

nlohmann::ordered_json random_schema(uint64_t seed) { return SchemaGenerator(seed).root(); }

}  // namespace tern::testing

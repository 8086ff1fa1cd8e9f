// Errors name their line and column; hostile or broken templates fail fast and cleanly: deep nesting, endless
// work, huge output, recursion, reference cycles, and random garbage never crash the process.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "chat/json_value.h"
#include "chat/template.h"
#include "test_data.h"

namespace tern::chat::jinja {
namespace {

Result<std::string> render(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object(),
                           const RenderOptions& options = {}) {
    TERN_ASSIGN_OR_RETURN(const Template tmpl, Template::parse(source));
    TERN_ASSIGN_OR_RETURN(const Value value, value_from_json(context));
    return tmpl.render(value, options);
}

std::string error_of(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
    const Result<std::string> out = render(source, context);
    return out.is_ok() ? "rendered: " + out.value() : out.status().message();
}

std::string repeat(const std::string& text, int count) {
    std::string out;
    for (int i = 0; i < count; ++i) out += text;
    return out;
}

TEST(Errors, NameLineAndColumn) {
    EXPECT_EQ(error_of("{{ 'a' + 1 }}"), "line 1, column 8: can only concatenate str (not \"int\") to str");
    EXPECT_EQ(error_of("line1\n{% for x in y %}\n  {{ x.a.b }}\n{% endfor %}", {{"y", {nlohmann::ordered_json::object()}}}),
              "line 3, column 9: 'dict object' has no attribute 'a'");
    EXPECT_EQ(error_of("{% if true %}\n{{ raise_exception('boom') }}{% endif %}"), "line 2, column 4: boom");
    EXPECT_EQ(error_of("{{ x | nope }}"), "line 1, column 8: no filter named 'nope'");
    EXPECT_EQ(error_of("{{ x is nope }}"), "line 1, column 9: no test named 'nope'");
    EXPECT_EQ(error_of("{{ 'abc }}"), "line 1, column 4: unterminated string literal");
    EXPECT_EQ(error_of("a\n{{ a $ b }}"), "line 2, column 6: unexpected char '$'");
    EXPECT_EQ(error_of("{% if x %}\n{% else %}\n{% else %}{% endif %}"), "line 3, column 4: encountered unknown tag 'else'");
    EXPECT_EQ(error_of("{{ undefined_name.attr }}"), "line 1, column 18: 'undefined_name' is undefined");
    EXPECT_EQ(error_of("{{ 1 // 0 }}"), "line 1, column 6: integer division or modulo by zero");
    EXPECT_EQ(error_of("{# never closed"), "line 1, column 1: missing end of comment tag");
    EXPECT_EQ(error_of("{% for a, b in [[1]] %}{% endfor %}"), "line 1, column 4: not enough values to unpack (expected 2, got 1)");
    EXPECT_EQ(error_of("{{ 9223372036854775807 + 1 }}"), "line 1, column 24: integer overflow (the result does not fit in 64 bits)");
    EXPECT_EQ(error_of("{% set x = 1 %}{% set x.y = 2 %}"), "line 1, column 19: cannot assign attribute on non-namespace object 'x'");
    EXPECT_EQ(error_of("{{ [1][0:3:0] }}"), "line 1, column 7: slice step cannot be zero");
}

TEST(Limits, DeepNestingFailsAtParseTime) {
    for (const std::string& source :
         {"{{ " + repeat("(", 5000) + "1" + repeat(")", 5000) + " }}", "{{ " + repeat("[", 5000) + repeat("]", 5000) + " }}",
          "{{ " + repeat("not ", 5000) + "x }}", "{{ " + repeat("-", 5000) + "1 }}", "{{ x" + repeat(".a", 5000) + " }}",
          "{{ 1" + repeat(" + 1", 5000) + " }}", "{{ x" + repeat("|trim", 5000) + " }}", "{{ x" + repeat("[0]", 5000) + " }}",
          "{{ f" + repeat("()", 5000) + " }}", "{{ 1 if x else " + repeat("2 if x else ", 5000) + "3 }}",
          repeat("{% if x %}", 5000) + repeat("{% endif %}", 5000),
          repeat("{% for x in y %}", 5000) + repeat("{% endfor %}", 5000)}) {
        const Result<Template> tmpl = Template::parse(source);
        ASSERT_FALSE(tmpl.is_ok()) << source.substr(0, 40);
        EXPECT_NE(tmpl.status().message().find("too deeply"), std::string::npos) << tmpl.status().message();
    }
}

TEST(Limits, EndlessWorkIsCut) {
    const std::vector<std::string> hostile = {
        "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
        "{% set ns = namespace(s='ab') %}{% for i in range(100) %}{% set ns.s = ns.s + ns.s %}{% endfor %}",
        "{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
        "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
        "{{ 'x' * 9223372036854775807 }}",
        "{{ [1, 2] * 9223372036854775807 }}",
        "{% set ns = namespace(s='x') %}{% for i in range(100000) %}{% for j in range(100000) %}"
        "{% set ns.s = ns.s ~ 'y' %}{% endfor %}{% endfor %}",
    };
    for (const std::string& source : hostile) {
        const Result<std::string> out = render(source);
        ASSERT_FALSE(out.is_ok()) << source;
        EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << out.status().message();
        EXPECT_EQ(out.status().message().rfind("line 1, column ", 0), 0u) << out.status().message();
    }
}

// Found by chat_template_fuzz (`messages * 2168611216` with no messages): an empty sequence repeated a huge
// number of times is empty, as in Python, and costs nothing; the loop used to spin once per repetition.
TEST(Limits, EmptySequenceRepeatedHugelyIsEmptyAtOnce) {
    const Result<std::string> out = render(
        "{{ ([] * 9223372036854775807)|length }},{{ ('' * 9223372036854775807)|length }},"
        "{{ (9223372036854775807 * ())|length }}");
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value(), "0,0,0");
}

// Strings made from other values (|string, |join, ~, |upper...) are built and charged as any other: a big list
// printed in a loop once cost 100 ms per iteration unaccounted for.
TEST(Limits, StringsMadeFromValuesAreCharged) {
    const std::string big = "{% set l = [{'role': 'user', 'content': 'hello there'}] * 200000 %}";
    for (const std::string use :
         {"(l|string)|length", "(l|join(','))|length", "(l ~ '')|length", "(l|upper)|length", "('%s'|format(l))|length",
          "('{}'.format(l))|length", "('%r' % (l,))|length", "(l|tojson)|length", "l == l", "'x' in l", "l is lower",
          "(l|unique|list)|length", "l.count(l)"}) {
        const std::string source = big + "{% for i in range(1000) %}{% if " + use + " == 0 %}{% endif %}{% endfor %}";
        const Result<std::string> out = render(source);
        ASSERT_FALSE(out.is_ok()) << use;
        EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << use << ": " << out.status().message();
    }
}

// Values that share their items are cheap to build and costly to walk: comparing, searching or printing them is
// charged by what the walk visits (Value::weight), not by what building them cost.
TEST(Limits, WalkingSharedValuesIsCharged) {
    const std::string nested = "{% set l = [[[[1] * 1000] * 1000] * 1000] %}";
    for (const std::string use : {"l == l", "1 in l[0]", "l|tojson", "l is lower", "l|string", "l|sort", "l|max"}) {
        const Result<std::string> out = render(nested + "{{ " + use + " }}");
        ASSERT_FALSE(out.is_ok()) << use;
        EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted) << use << ": " << out.status().message();
    }
    const std::string text = "{% set s = 'x' * 8000000 %}{% for i in range(100000) %}{% if s == s %}{% endif %}{% endfor %}";
    EXPECT_EQ(render(text).status().code(), StatusCode::kResourceExhausted);
}

TEST(Limits, OutputLimitIsConfigurable) {
    RenderOptions options;
    options.max_output_bytes = 10;
    EXPECT_TRUE(render("0123456789", {}, options).is_ok());
    const Result<std::string> out = render("0123456789x", {}, options);
    ASSERT_FALSE(out.is_ok());
    EXPECT_EQ(out.status().code(), StatusCode::kResourceExhausted);
}

TEST(Limits, MacroRecursionIsBounded) {
    const Result<std::string> out = render("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
    ASSERT_FALSE(out.is_ok());
    EXPECT_NE(out.status().message().find("macro calls nested deeper"), std::string::npos) << out.status().message();
}

TEST(Limits, NamespaceCyclesAndChainsAreSafe) {
    const Result<std::string> cycle = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns.me.me.me is defined }}");
    ASSERT_TRUE(cycle.is_ok()) << cycle.status().message();
    EXPECT_EQ(cycle.value(), "True");
    EXPECT_FALSE(render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns | tojson }}").is_ok());
    // Printing a cycle stops at a fixed depth instead of recursing forever.
    const Result<std::string> printed = render("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
    ASSERT_TRUE(printed.is_ok());
    EXPECT_NE(printed.value().find("..."), std::string::npos);
    // A linked list of 50000 namespaces: freeing it must not recurse 50000 deep.
    const Result<std::string> chain = render(
        "{% set head = namespace(next=none) %}{% set ns = namespace(cur=head) %}{% for i in range(50000) %}"
        "{% set n = namespace(next=none) %}{% set c = ns.cur %}{% set c.next = n %}{% set ns.cur = n %}{% endfor %}ok");
    ASSERT_TRUE(chain.is_ok()) << chain.status().message();
    EXPECT_EQ(chain.value(), "ok");
}

TEST(Limits, ValuesCannotNestWithoutEnd) {
    const Result<std::string> chain = render("{% set x = [] %}" + repeat("{% set x = [x] %}", 300) + "{{ x|length }}");
    ASSERT_FALSE(chain.is_ok());
    EXPECT_NE(chain.status().message().find("nested too deeply"), std::string::npos) << chain.status().message();
    const Result<std::string> grown = render("{% set ns = namespace(v=1) %}{% for i in range(1000) %}{% set ns.v = {'a': ns.v} %}{% endfor %}");
    ASSERT_FALSE(grown.is_ok());
    EXPECT_NE(grown.status().message().find("nested too deeply"), std::string::npos) << grown.status().message();
}

TEST(Limits, DeepJsonInputIsRefused) {
    nlohmann::ordered_json deep = 1;
    for (int i = 0; i < 1000; ++i) deep = nlohmann::ordered_json::array({deep});
    EXPECT_FALSE(value_from_json(deep).is_ok());
}

// Every failure must be a positioned Status; nothing may crash or hang.
void expect_clean(const std::string& source, const Value& context) {
    const Result<Template> tmpl = Template::parse(source);
    if (!tmpl.is_ok()) {
        EXPECT_EQ(tmpl.status().message().rfind("line ", 0), 0u) << tmpl.status().message();
        return;
    }
    RenderOptions options;
    options.max_work = 200000;
    options.max_output_bytes = 1 << 16;
    const Result<std::string> out = tmpl.value().render(context, options);
    if (!out.is_ok()) {
        EXPECT_EQ(out.status().message().rfind("line ", 0), 0u) << out.status().message();
    }
}

Value fuzz_context() {
    nlohmann::ordered_json context = {
        {"messages", {{{"role", "system"}, {"content", "s"}}, {{"role", "user"}, {"content", "u \u00e9"}}}},
        {"tools", nullptr}, {"bos_token", "<s>"}, {"eos_token", "</s>"}, {"add_generation_prompt", true},
        {"n", 3}, {"f", 1.5}, {"d", {{"k", {1, 2}}}}};
    return value_from_json(context).value();
}

TEST(Fuzz, RandomBytesNeverCrash) {
    std::mt19937 rng(1234);
    const Value context = fuzz_context();
    const std::string alphabet = "{}%#-+()[]|.,:~'\"\\ \n\tabcxyz019_=<>!*/";
    for (int iteration = 0; iteration < 3000; ++iteration) {
        std::string source;
        const int length = static_cast<int>(rng() % 80);
        for (int i = 0; i < length; ++i) {
            source += rng() % 8 == 0 ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
        }
        expect_clean(source, context);
    }
}

TEST(Fuzz, TokenSoupNeverCrashes) {
    std::mt19937 rng(99);
    const Value context = fuzz_context();
    const std::vector<std::string> pieces = {
        "{{", "}}", "{%", "%}", "{#", "#}", "{%-", "-%}", "{{-", "-}}", " if ", " else ", " elif ", " endif ", " for ",
        " in ", " endfor ", " set ", " = ", " namespace(", ")", "(", "[", "]", "{", "}", ",", ":", "|", " is ",
        " not ", " and ", " or ", "messages", "m", "loop.index", "ns.x", ".role", "['content']", "[::-1]", "[1:]",
        " + ", " ~ ", " * ", " // ", " % ", "'s'", "\"t\"", "1", "0", "-1", "2.5", "none", "true", "trim", "tojson",
        "length", "join", "selectattr('role', 'equalto', 'user')", "map(attribute='content')", "list", "items",
        "defined", "string", "raise_exception('x')", "range(5)", "range(n)", "macro f(a)", "endmacro", "f(1)",
        "break", "continue", " recursive", "text\n", "  ", "\n", "d.k", ".strip()", ".split(',')", "default('z')"};
    for (int iteration = 0; iteration < 4000; ++iteration) {
        std::string source;
        const int count = 1 + static_cast<int>(rng() % 24);
        for (int i = 0; i < count; ++i) source += pieces[rng() % pieces.size()];
        expect_clean(source, context);
    }
}

TEST(Fuzz, MutatedRealTemplatesNeverCrash) {
    std::mt19937 rng(7);
    const Value context = fuzz_context();
    std::vector<std::string> sources;
    for (const char* name : {"llama3.1-instruct", "qwen2.5-instruct", "mistral-instruct-v0.3", "tinyllama-zephyr",
                             "gemma-it", "llama2-chat"}) {
        sources.push_back(test_data::read_file(test_data::data_path(std::string("templates/") + name + ".jinja")));
        ASSERT_FALSE(sources.back().empty());
    }
    for (int iteration = 0; iteration < 1500; ++iteration) {
        std::string source = sources[rng() % sources.size()];
        const int edits = 1 + static_cast<int>(rng() % 6);
        for (int e = 0; e < edits && !source.empty(); ++e) {
            const size_t pos = rng() % source.size();
            switch (rng() % 4) {
                case 0: source.erase(pos, 1 + rng() % 12); break;
                case 1: source.insert(pos, 1, "{}%#-'\"()[]|"[rng() % 12]); break;
                case 2: source[pos] = static_cast<char>(rng() % 256); break;
                default: source.insert(pos, source.substr(rng() % source.size(), rng() % 40)); break;
            }
        }
        expect_clean(source, context);
    }
}

}  // namespace
}  // namespace tern::chat::jinja

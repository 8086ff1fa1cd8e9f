// The interpreter, one feature at a time: every case of tests/chat/data/interpreter.json (literals, operators,
// lookups, filters, tests, methods, loops, scoping, macros, whitespace control, errors) must render what Jinja2
// rendered, or fail where it failed. Then behaviour Jinja2 cannot produce here: Hugging Face's {% generation %},
// and strftime_now.
#include <gtest/gtest.h>

#include <string>

#include "chat/json_value.h"
#include "chat/template.h"
#include "test_data.h"

namespace tern::chat::jinja {
namespace {

Result<std::string> render(const std::string& source, const nlohmann::ordered_json& context = nlohmann::ordered_json::object()) {
    TERN_ASSIGN_OR_RETURN(const Template tmpl, Template::parse(source));
    TERN_ASSIGN_OR_RETURN(const Value value, value_from_json(context));
    return tmpl.render(value);
}

TEST(Interpreter, MatchesJinja2OnEveryCase) {
    const nlohmann::ordered_json cases = test_data::read_json("interpreter.json")["cases"];
    ASSERT_GE(cases.size(), 70u);
    int failures_expected = 0;
    for (const auto& c : cases) {
        SCOPED_TRACE(c["name"].get<std::string>() + ": " + c["template"].get<std::string>());
        const Result<std::string> rendered = render(c["template"].get<std::string>(), c["context"]);
        if (c.contains("expected")) {
            ASSERT_TRUE(rendered.is_ok()) << rendered.status().message();
            EXPECT_EQ(rendered.value(), c["expected"].get<std::string>());
        } else {
            ++failures_expected;
            EXPECT_FALSE(rendered.is_ok()) << "rendered: " << rendered.value();
            if (!rendered.is_ok()) {
                EXPECT_EQ(rendered.status().message().rfind("line ", 0), 0u) << rendered.status().message();
            }
        }
    }
    EXPECT_GE(failures_expected, 15);
}

TEST(Interpreter, GenerationBlockRendersItsBody) {
    // Hugging Face's AssistantTracker extension marks assistant text; rendering is unchanged by it.
    const Result<std::string> out =
        render("{% for m in msgs %}{% generation %}[{{ m }}]{% endgeneration %}{% endfor %}", {{"msgs", {"a", "b"}}});
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value(), "[a][b]");
}

TEST(Interpreter, StrftimeNowUsesTheGivenTime) {
    const Result<Template> tmpl = Template::parse("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%A %j') }}|{{ strftime_now('') }}");
    ASSERT_TRUE(tmpl.is_ok());
    RenderOptions options;
    options.now = test_data::parse_time("2024-09-05T12:00:00");
    const Result<std::string> out = tmpl.value().render(Value(), options);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_EQ(out.value(), "05 Sep 2024|Thursday 249|");
}

TEST(Interpreter, StrftimeNowDefaultsToTheClock) {
    const Result<std::string> out = render("{{ strftime_now('%Y') | int > 2000 }}");
    ASSERT_TRUE(out.is_ok());
    EXPECT_EQ(out.value(), "True");
}

TEST(Interpreter, TrimAndLstripCanBeTurnedOff) {
    ParseOptions plain;
    plain.trim_blocks = false;
    plain.lstrip_blocks = false;
    const Result<Template> tmpl = Template::parse("a\n  {% if true %}\nb\n  {% endif %}\n", plain);
    ASSERT_TRUE(tmpl.is_ok());
    const Result<std::string> out = tmpl.value().render(Value());
    ASSERT_TRUE(out.is_ok());
    EXPECT_EQ(out.value(), "a\n  \nb\n  ");  // Jinja2's defaults: nothing trimmed, the last newline dropped
}

TEST(Interpreter, ContextMustBeADict) {
    const Result<Template> tmpl = Template::parse("x");
    ASSERT_TRUE(tmpl.is_ok());
    EXPECT_FALSE(tmpl.value().render(Value::integer(3)).is_ok());
    EXPECT_TRUE(tmpl.value().render(Value()).is_ok());
}

TEST(Interpreter, ParsedTemplateRendersManyContexts) {
    const Result<Template> tmpl = Template::parse("{% for m in messages %}{{ m.role }}:{{ m.content }};{% endfor %}");
    ASSERT_TRUE(tmpl.is_ok());
    for (int i = 0; i < 3; ++i) {
        nlohmann::ordered_json context = {{"messages", nlohmann::ordered_json::array()}};
        for (int j = 0; j <= i; ++j) context["messages"].push_back({{"role", "user"}, {"content", std::to_string(j)}});
        const Result<std::string> out = tmpl.value().render(value_from_json(context).value());
        ASSERT_TRUE(out.is_ok());
        EXPECT_EQ(std::count(out.value().begin(), out.value().end(), ';'), i + 1);
    }
}

}  // namespace
}  // namespace tern::chat::jinja

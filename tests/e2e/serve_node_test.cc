// The official `openai` npm client against `tern serve`: one scenario script (tests/e2e/node/*.mjs) per test, on
// stories260K and on the tiny synthetic model. The server runs here; the script gets its address in the environment.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "serve_process.h"

namespace tern {
namespace {

struct NodeCase {
    const char* model;   // "stories260K" or "tiny"
    const char* script;  // file name under tests/e2e/node
};

std::string shell_quote(const std::string& word) {
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

class NodeScenario : public ::testing::TestWithParam<NodeCase> {};

TEST_P(NodeScenario, PassesAgainstTernServe) {
    const NodeCase& param = GetParam();
    ASSERT_TRUE(std::filesystem::exists(std::string(TERN_NODE_DIR) + "/node_modules/openai"))
        << "the openai npm package is missing: run scripts/install-deps --test (npm ci --prefix tests/e2e/node)";
    const bool stories = std::string(param.model) == "stories260K";
    const std::string model_path = stories ? testing::kStoriesModel : testing::tiny_model_path();
    ASSERT_TRUE(std::filesystem::exists(model_path)) << model_path;

    testing::ServeProcess server;
    const std::string served_name = std::string(param.model) + "-e2e";
    // An f32 KV cache as `tern generate` keeps: random weights give near-ties that f16 keys would tip over.
    const std::string failure = server.start({"-m", model_path, "-t", "1", "--served-model-name", served_name,
                                              "--kv-cache-type", "f32"});
    ASSERT_EQ(failure, "");

    std::string command = "cd " + shell_quote(TERN_NODE_DIR) + " && TERN_BASE_URL=" + shell_quote(server.base_url()) +
                          " TERN_MODEL_NAME=" + shell_quote(served_name) + " TERN_MODEL_PATH=" +
                          shell_quote(model_path) + " TERN_BINARY=" + shell_quote(TERN_BINARY);
    if (stories) {
        command += " TERN_REFERENCE_JSON=" +
                   shell_quote(std::string(TERN_SHARED_DIR) + "/models/stories260K/reference.json");
    }
    command += " ";
    command += shell_quote(TERN_NODE);
    command += " ";
    command += param.script;
    command += " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[4096];
    for (size_t count = 0; (count = std::fread(buffer, 1, sizeof(buffer), pipe)) > 0;) output.append(buffer, count);
    const int status = ::pclose(pipe);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << param.script << " failed:\n" << output
                                                               << "\nserver log:\n" << server.log();
    EXPECT_EQ(server.stop(), 0) << server.log();
}

std::string case_name(const ::testing::TestParamInfo<NodeCase>& info) {
    std::string name = std::string(info.param.model) + "_" + info.param.script;
    name = name.substr(0, name.size() - 4);  // ".mjs"
    for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return name;
}

INSTANTIATE_TEST_SUITE_P(OpenAiClient, NodeScenario,
                         ::testing::Values(NodeCase{"stories260K", "greedy.mjs"}, NodeCase{"tiny", "greedy.mjs"},
                                           NodeCase{"stories260K", "logprobs.mjs"}, NodeCase{"tiny", "logprobs.mjs"},
                                           NodeCase{"stories260K", "stop.mjs"}, NodeCase{"tiny", "stop.mjs"},
                                           NodeCase{"stories260K", "choices_usage.mjs"},
                                           NodeCase{"tiny", "choices_usage.mjs"},
                                           NodeCase{"stories260K", "unsupported_fields.mjs"},
                                           NodeCase{"stories260K", "embeddings.mjs"},
                                           NodeCase{"stories260K", "logit_bias.mjs"}),
                         case_name);

}  // namespace
}  // namespace tern

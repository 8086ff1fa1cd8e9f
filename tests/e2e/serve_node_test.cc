// The official `openai` npm client against `tern serve`: one scenario script (tests/e2e/node/*.mjs) per test, on
// stories260K and on the tiny synthetic model. The server runs here; the script gets its address in the environment.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "serve_process.h"

namespace tern {
namespace {

struct NodeCase {
    const char* model;   // "stories260K" or "tiny"
    const char* script;  // file name under tests/e2e/node
    // A chat template file under tests/chat/data/templates, or none (the model's own, or the plain format). Its
    // prompts may outgrow the tiny model's 512 tokens, so the context is stretched to 2048 (random weights mind not).
    const char* chat_template = nullptr;
};

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
    std::vector<std::string> args = {"-m", model_path, "-t", "1", "--served-model-name", served_name,
                                     "--kv-cache-type", "f32"};
    if (param.chat_template != nullptr) {
        args.insert(args.end(), {"--chat-template", std::string(TERN_TEMPLATE_DIR) + "/" + param.chat_template,
                                 "--max-model-len", "2048"});
    }
    const std::string failure = server.start(args);
    ASSERT_EQ(failure, "");

    testing::HeaderList env = {{"TERN_BASE_URL", server.base_url()}, {"TERN_MODEL_NAME", served_name},
                               {"TERN_MODEL_PATH", model_path}, {"TERN_BINARY", TERN_BINARY}};
    if (stories) {
        env.emplace_back("TERN_REFERENCE_JSON", std::string(TERN_SHARED_DIR) + "/models/stories260K/reference.json");
    }
    const testing::ScriptResult result = testing::run_node_script(TERN_NODE, TERN_NODE_DIR, env, param.script);
    EXPECT_TRUE(result.ok) << param.script << " failed:\n" << result.output << "\nserver log:\n" << server.log();
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
                                           NodeCase{"stories260K", "logit_bias.mjs"},
                                           NodeCase{"tiny", "tools.mjs", "qwen2.5-instruct.jinja"},
                                           NodeCase{"tiny", "structured.mjs"}),
                         case_name);

}  // namespace
}  // namespace tern

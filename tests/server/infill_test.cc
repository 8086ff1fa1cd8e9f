// OpenAI's `suffix` as fill-in-the-middle: llama.cpp's /infill layout, on synthetic ids, and the model's markers
// found by their text or named by id.
#include <gtest/gtest.h>

#include "server/infill.h"

namespace tern::server {
namespace {

TEST(Infill, LayoutIsBosPrefixMarkerPrefixSuffixMarkerSuffixMiddleMarker) {
    const FimTokens fim{.prefix = 900, .suffix = 901, .middle = 902};
    const std::vector<int32_t> prefix = {10, 11, 12};
    const std::vector<int32_t> suffix = {20, 21};
    EXPECT_EQ(infill_prompt(fim, 1, prefix, suffix), (std::vector<int32_t>{1, 900, 10, 11, 12, 901, 20, 21, 902}));
    EXPECT_EQ(infill_prompt(fim, -1, prefix, {}), (std::vector<int32_t>{900, 10, 11, 12, 901, 902})) << "no BOS";
    EXPECT_EQ(infill_prompt(fim, -1, {}, suffix), (std::vector<int32_t>{900, 901, 20, 21, 902}));
}

VocabData vocab_with(std::vector<std::string> extra) {
    VocabData data;
    data.tokens = {"<unk>", "<s>", "</s>", "a", "b"};
    for (std::string& token : extra) data.tokens.push_back(std::move(token));
    data.unk_id = 0;
    data.bos_id = 1;
    data.eos_id = 2;
    return data;
}

TEST(Infill, MarkersAreFoundByTextOrIdAndAllThreeAreNeeded) {
    auto coder = Tokenizer::create(vocab_with({"<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>"}));
    ASSERT_TRUE(coder.is_ok()) << coder.status().message();
    const std::optional<FimTokens> found = fim_tokens(*coder.value());
    ASSERT_TRUE(found.has_value());
    EXPECT_EQ(found->prefix, 5);
    EXPECT_EQ(found->suffix, 6);
    EXPECT_EQ(found->middle, 7);

    VocabData named = vocab_with({"x", "y", "z"});
    named.fim_pre_id = 7;  // tokenizer.ggml.fim_*_token_id, whatever the token's text
    named.fim_suf_id = 6;
    named.fim_mid_id = 5;
    auto by_id = Tokenizer::create(std::move(named));
    ASSERT_TRUE(by_id.is_ok()) << by_id.status().message();
    const std::optional<FimTokens> given = fim_tokens(*by_id.value());
    ASSERT_TRUE(given.has_value());
    EXPECT_EQ(given->prefix, 7);
    EXPECT_EQ(given->middle, 5);

    auto partial = Tokenizer::create(vocab_with({"<PRE>", "<SUF>"}));
    ASSERT_TRUE(partial.is_ok()) << partial.status().message();
    EXPECT_FALSE(fim_tokens(*partial.value()).has_value()) << "no middle marker";
    auto none = Tokenizer::create(vocab_with({}));
    ASSERT_TRUE(none.is_ok());
    EXPECT_FALSE(fim_tokens(*none.value()).has_value());
}

}  // namespace
}  // namespace tern::server

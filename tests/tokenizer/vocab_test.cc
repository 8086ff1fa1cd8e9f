// Reading vocabularies from GGUF metadata: llama.cpp's defaults, overrides, and clear errors for broken files.
#include <gtest/gtest.h>

#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/test_vocabs.h"
#include "tokenizer/vocab.h"

namespace tern {
namespace {

// Owns the bytes a parsed GgufFile points into.
struct ParsedGguf {
    std::vector<uint8_t> bytes;
    std::unique_ptr<GgufFile> file;
};

ParsedGguf parse(const GgufWriter& writer) {
    ParsedGguf parsed;
    parsed.bytes = writer.to_bytes();
    auto file = GgufFile::parse(parsed.bytes.data(), parsed.bytes.size(), "vocab.gguf");
    TERN_CHECK(file.is_ok()) << file.status().message();
    parsed.file = std::move(file).value();
    return parsed;
}

std::vector<int32_t> as_ints(const std::vector<TokenType>& types) {
    std::vector<int32_t> ints;
    for (TokenType type : types) ints.push_back(static_cast<int32_t>(type));
    return ints;
}

GgufWriter spm_writer() {
    const VocabData vocab = testing::make_spm_vocab();
    GgufWriter writer;
    writer.add_string("tokenizer.ggml.model", "llama");
    writer.add_string_array("tokenizer.ggml.tokens", vocab.tokens);
    writer.add_f32_array("tokenizer.ggml.scores", vocab.scores);
    writer.add_i32_array("tokenizer.ggml.token_type", as_ints(vocab.token_types));
    return writer;
}

GgufWriter bpe_writer(const std::string& pre) {
    const VocabData vocab = testing::make_bpe_vocab(pre);
    GgufWriter writer;
    writer.add_string("tokenizer.ggml.model", "gpt2");
    writer.add_string("tokenizer.ggml.pre", pre);
    writer.add_string_array("tokenizer.ggml.tokens", vocab.tokens);
    writer.add_i32_array("tokenizer.ggml.token_type", as_ints(vocab.token_types));
    writer.add_string_array("tokenizer.ggml.merges", vocab.merges);
    return writer;
}

Status load_error(const GgufWriter& writer) {
    const ParsedGguf parsed = parse(writer);
    auto vocab = vocab_from_gguf(*parsed.file);
    return vocab.is_ok() ? Status::ok() : vocab.status();
}

void expect_error(const GgufWriter& writer, std::string_view fragment) {
    const Status status = load_error(writer);
    ASSERT_FALSE(status.is_ok()) << "expected an error mentioning " << fragment;
    EXPECT_NE(status.message().find(fragment), std::string::npos) << status.message();
}

TEST(VocabFromGgufTest, SpmGetsLlamaCppDefaults) {
    const ParsedGguf parsed = parse(spm_writer());
    auto vocab = vocab_from_gguf(*parsed.file);
    ASSERT_TRUE(vocab.is_ok()) << vocab.status().message();
    EXPECT_EQ(vocab.value().kind, VocabKind::kSpm);
    EXPECT_EQ(vocab.value().bos_id, 1);
    EXPECT_EQ(vocab.value().eos_id, 2);
    EXPECT_EQ(vocab.value().unk_id, 0);
    EXPECT_TRUE(vocab.value().add_bos);
    EXPECT_FALSE(vocab.value().add_eos);
    EXPECT_TRUE(vocab.value().add_space_prefix);
    auto tokenizer = Tokenizer::from_gguf(*parsed.file);
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    EXPECT_EQ(tokenizer.value()->encode("hello", true, false),
              (std::vector<int32_t>{1, tokenizer.value()->find_token("\u2581hello").value()}));
}

TEST(VocabFromGgufTest, KeysOverrideDefaults) {
    GgufWriter writer = spm_writer();
    writer.add_u32("tokenizer.ggml.eos_token_id", 0);
    writer.add_u32("tokenizer.ggml.bos_token_id", 1000000);  // out of range: ignored
    writer.add_bool("tokenizer.ggml.add_space_prefix", false);
    writer.add_bool("tokenizer.ggml.add_eos_token", true);
    const ParsedGguf parsed = parse(writer);
    auto vocab = vocab_from_gguf(*parsed.file);
    ASSERT_TRUE(vocab.is_ok()) << vocab.status().message();
    EXPECT_EQ(vocab.value().bos_id, 1);
    EXPECT_EQ(vocab.value().eos_id, 0);
    EXPECT_FALSE(vocab.value().add_space_prefix);
    EXPECT_TRUE(vocab.value().add_eos);
}

TEST(VocabFromGgufTest, BpeDefaultsDependOnPreTokenizer) {
    const ParsedGguf qwen = parse(bpe_writer("qwen2"));
    auto qwen_vocab = vocab_from_gguf(*qwen.file);
    ASSERT_TRUE(qwen_vocab.is_ok()) << qwen_vocab.status().message();
    EXPECT_EQ(qwen_vocab.value().kind, VocabKind::kBpe);
    EXPECT_FALSE(qwen_vocab.value().add_bos);
    EXPECT_EQ(qwen_vocab.value().bos_id, 11);
    EXPECT_EQ(qwen_vocab.value().merges.size(), 11u);
    const ParsedGguf llama3 = parse(bpe_writer("llama-bpe"));
    auto llama3_vocab = vocab_from_gguf(*llama3.file);
    ASSERT_TRUE(llama3_vocab.is_ok()) << llama3_vocab.status().message();
    EXPECT_TRUE(llama3_vocab.value().add_bos);
}

TEST(VocabFromGgufTest, MissingOrMistypedArraysAreErrors) {
    GgufWriter no_model;
    no_model.add_string_array("tokenizer.ggml.tokens", {"a"});
    expect_error(no_model, "tokenizer.ggml.model");

    GgufWriter no_tokens;
    no_tokens.add_string("tokenizer.ggml.model", "llama");
    expect_error(no_tokens, "tokenizer.ggml.tokens");

    GgufWriter no_merges;
    no_merges.add_string("tokenizer.ggml.model", "gpt2");
    no_merges.add_string("tokenizer.ggml.pre", "gpt-2");
    no_merges.add_string_array("tokenizer.ggml.tokens", {"a", "b"});
    expect_error(no_merges, "tokenizer.ggml.merges");

    GgufWriter short_scores;
    short_scores.add_string("tokenizer.ggml.model", "llama");
    short_scores.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
    short_scores.add_f32_array("tokenizer.ggml.scores", {0.0f});
    expect_error(short_scores, "tokenizer.ggml.scores");

    GgufWriter float_types;
    float_types.add_string("tokenizer.ggml.model", "llama");
    float_types.add_string_array("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>"});
    float_types.add_f32_array("tokenizer.ggml.token_type", {1, 1, 1});
    expect_error(float_types, "tokenizer.ggml.token_type");

    GgufWriter scalar_tokens;
    scalar_tokens.add_string("tokenizer.ggml.model", "llama");
    scalar_tokens.add_string("tokenizer.ggml.tokens", "abc");
    expect_error(scalar_tokens, "tokenizer.ggml.tokens");
}

TEST(VocabFromGgufTest, UnknownModelOrPreIsAnError) {
    GgufWriter bert;
    bert.add_string("tokenizer.ggml.model", "bert");
    bert.add_string_array("tokenizer.ggml.tokens", {"a"});
    expect_error(bert, "unsupported tokenizer model 'bert'");
    expect_error(bpe_writer("tekken"), "unknown pre-tokenizer 'tekken'");
    expect_error(bpe_writer("tekken"), "deepseek-coder");
}

TEST(VocabFromGgufTest, AddBosWithoutBosIsAnError) {
    GgufWriter writer;
    writer.add_string("tokenizer.ggml.model", "llama");
    writer.add_string_array("tokenizer.ggml.tokens", {"a"});  // the default BOS id 1 does not exist
    expect_error(writer, "BOS");
}

TEST(TokenizerCreateTest, RejectsInconsistentData) {
    VocabData duplicate = testing::make_spm_vocab();
    duplicate.tokens[10] = duplicate.tokens[11];
    auto result = Tokenizer::create(duplicate);
    ASSERT_FALSE(result.is_ok());
    EXPECT_NE(result.status().message().find("duplicate token"), std::string::npos);

    VocabData bad_id = testing::make_spm_vocab();
    bad_id.eos_id = 100000;
    EXPECT_FALSE(Tokenizer::create(bad_id).is_ok());

    VocabData short_types = testing::make_spm_vocab();
    short_types.token_types.resize(3);
    EXPECT_FALSE(Tokenizer::create(short_types).is_ok());

    VocabData empty;
    EXPECT_FALSE(Tokenizer::create(empty).is_ok());

    VocabData bad_pre = testing::make_bpe_vocab("gpt-2");
    bad_pre.pre = "nope";
    EXPECT_FALSE(Tokenizer::create(bad_pre).is_ok());
}

}  // namespace
}  // namespace tern

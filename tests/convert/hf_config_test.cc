// config.json parsing, the tensor plan's RoPE row order, and tokenizer.json reading.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "convert/tensor_plan.h"
#include "tiny_hf_model.h"
#include "tokenizer/vocab.h"

namespace tern {
namespace {

using nlohmann::json;

std::string config_error(const json& config) {
    auto parsed = parse_hf_config(config.dump(), "config.json");
    return parsed.is_ok() ? std::string() : parsed.status().message();
}

TEST(HfConfig, ReadsLlamaSizesAndDefaults) {
    json config = testing::tiny_config({});
    config.erase("num_key_value_heads");
    config.erase("max_position_embeddings");
    config["rope_theta"] = 500000;  // an integer is a number too
    auto parsed = parse_hf_config(config.dump(), "config.json");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    const HfConfig& hf = parsed.value();
    EXPECT_EQ(hf.architecture, "llama");
    EXPECT_EQ(hf.hidden_size, 16);
    EXPECT_EQ(hf.num_kv_heads, 4);  // defaults to the head count
    EXPECT_EQ(hf.head_dim, 4);
    EXPECT_FALSE(hf.head_dim_given);
    EXPECT_EQ(hf.context_length, 2048);  // LlamaConfig's default
    EXPECT_EQ(hf.rope_theta, 500000.0f);
    EXPECT_EQ(hf.rms_norm_eps, 1e-5f);
    EXPECT_EQ(hf.bos_token_id, 1);
    EXPECT_EQ(hf.rope_scaling, RopeScalingKind::kNone);
}

TEST(HfConfig, FamiliesMapToGgufArchitectures) {
    json config = testing::tiny_config({});
    config["architectures"] = {"MistralForCausalLM"};
    EXPECT_EQ(parse_hf_config(config.dump(), "c").value().architecture, "llama");
    config["architectures"] = {"Qwen2ForCausalLM"};
    config.erase("max_position_embeddings");
    EXPECT_EQ(parse_hf_config(config.dump(), "c").value().architecture, "qwen2");
    EXPECT_EQ(parse_hf_config(config.dump(), "c").value().context_length, 32768);
}

// Gemma 3 4B's multimodal config.json as published: text_config gives the sizes, the window and rope_scaling; the
// rest is Gemma3TextConfig's defaults, and the top level's token ids still count.
TEST(HfConfig, Gemma3MultimodalReadsTextConfigWithItsDefaults) {
    const json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                         {"eos_token_id", 106},
                         {"text_config", {{"hidden_size", 2560}, {"intermediate_size", 10240},
                                          {"model_type", "gemma3_text"}, {"num_hidden_layers", 34},
                                          {"rope_scaling", {{"factor", 8.0}, {"rope_type", "linear"}}},
                                          {"sliding_window", 1024}}},
                         {"vision_config", {{"hidden_size", 1152}, {"model_type", "siglip_vision_model"}}}};
    auto parsed = parse_hf_config(config.dump(), "config.json");
    ASSERT_TRUE(parsed.is_ok()) << parsed.status().message();
    const HfConfig& hf = parsed.value();
    EXPECT_EQ(hf.architecture, "gemma3");
    EXPECT_TRUE(hf.multimodal);
    EXPECT_EQ(hf.hidden_size, 2560);
    EXPECT_EQ(hf.num_layers, 34);
    EXPECT_EQ(hf.num_heads, 8);
    EXPECT_EQ(hf.num_kv_heads, 4);
    EXPECT_EQ(hf.head_dim, 256);
    EXPECT_EQ(hf.vocab_size, 262208);
    EXPECT_EQ(hf.context_length, 131072);
    EXPECT_EQ(hf.rope_theta, 1000000.0f);
    EXPECT_EQ(hf.rope_local_base_freq, 10000.0f);
    EXPECT_EQ(hf.rms_norm_eps, 1e-6f);
    EXPECT_EQ(hf.sliding_window, 1024);
    EXPECT_EQ(hf.rope_scaling, RopeScalingKind::kLinear);
    EXPECT_EQ(hf.rope_factor, 8.0f);
    EXPECT_TRUE(hf.tie_word_embeddings);
    EXPECT_EQ(hf.eos_token_id, 106);

    json no_text = config;
    no_text.erase("text_config");
    EXPECT_EQ(config_error(no_text), "config.json: a Gemma3ForConditionalGeneration config needs a 'text_config' "
                                     "object (the language model's sizes)");
    json transformers5 = config;
    transformers5["text_config"]["rope_parameters"] = {{"full_attention", {{"rope_theta", 1000000.0}}}};
    EXPECT_NE(config_error(transformers5).find("'rope_parameters' (transformers 5) are not read yet"),
              std::string::npos) << config_error(transformers5);
    json no_layers = config;
    no_layers["text_config"].erase("num_hidden_layers");
    EXPECT_EQ(config_error(no_layers), "config.json: missing 'num_hidden_layers'");
}

TEST(HfConfig, UnknownArchitectureIsAnError) {
    json config = testing::tiny_config({});
    config["architectures"] = {"GPT2LMHeadModel"};
    EXPECT_EQ(config_error(config),
              "config.json: unknown architecture GPT2LMHeadModel; tern converts the llama (with Mistral and Mixtral), "
              "qwen2, qwen3, phi3, gemma2 and gemma3 (Gemma3ForCausalLM, and Gemma3ForConditionalGeneration's text "
              "model) families");
    config.erase("architectures");
    EXPECT_NE(config_error(config).find("missing 'architectures'"), std::string::npos);
}

TEST(HfConfig, BadSizesAreErrors) {
    json config = testing::tiny_config({});
    config.erase("hidden_size");
    EXPECT_NE(config_error(config).find("missing 'hidden_size'"), std::string::npos);
    config = testing::tiny_config({});
    config["hidden_size"] = "16";
    EXPECT_NE(config_error(config).find("'hidden_size' must be a positive integer"), std::string::npos);
    config["hidden_size"] = -16;
    EXPECT_NE(config_error(config).find("'hidden_size' must be a positive integer"), std::string::npos);
    config = testing::tiny_config({});
    config["num_key_value_heads"] = 3;
    EXPECT_NE(config_error(config).find("cannot be grouped"), std::string::npos);
    config = testing::tiny_config({});
    config["hidden_size"] = 18;
    EXPECT_NE(config_error(config).find("not a multiple of 4 attention heads"), std::string::npos);
    config = testing::tiny_config({});
    config["rms_norm_eps"] = "small";
    EXPECT_NE(config_error(config).find("'rms_norm_eps' must be a number"), std::string::npos);
    EXPECT_NE(config_error(json::array()).find("must be a JSON object"), std::string::npos);
    auto bad_json = parse_hf_config("{\"hidden_size\": ", "config.json");
    ASSERT_FALSE(bad_json.is_ok());
    EXPECT_NE(bad_json.status().message().find("config.json: invalid JSON"), std::string::npos);
}

TEST(HfConfig, RopeScaling) {
    json config = testing::tiny_config({});
    config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    HfConfig hf = parse_hf_config(config.dump(), "c").value();
    EXPECT_EQ(hf.rope_scaling, RopeScalingKind::kLlama3);
    EXPECT_EQ(hf.rope_factor, 8.0f);
    EXPECT_EQ(hf.rope_original_context, 8192);
    config["rope_scaling"] = {{"type", "linear"}, {"factor", 2.0}};
    hf = parse_hf_config(config.dump(), "c").value();
    EXPECT_EQ(hf.rope_scaling, RopeScalingKind::kLinear);
    EXPECT_EQ(hf.rope_factor, 2.0f);
    config["rope_scaling"] = {{"rope_type", "yarn"}, {"factor", 4.0}};
    EXPECT_NE(config_error(config).find("rope_scaling type 'yarn' is not supported"), std::string::npos);
    config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", 0.0}};
    EXPECT_NE(config_error(config).find("invalid factors"), std::string::npos);
}

TEST(HfConfig, LongRope) {
    json config = testing::tiny_config({});  // head_dim 4: two factors each
    config["max_position_embeddings"] = 64;
    config["original_max_position_embeddings"] = 16;
    config["rope_scaling"] = {{"type", "su"}, {"long_factor", {1.0, 4.0}}, {"short_factor", {1.0, 1.5}}};
    HfConfig hf = parse_hf_config(config.dump(), "c").value();
    EXPECT_EQ(hf.rope_scaling, RopeScalingKind::kLongRope);
    EXPECT_EQ(hf.rope_long_factors, (std::vector<float>{1.0f, 4.0f}));
    EXPECT_EQ(hf.rope_short_factors, (std::vector<float>{1.0f, 1.5f}));
    EXPECT_EQ(hf.rope_original_context, 16);
    EXPECT_NEAR(hf.rope_attention_factor, std::sqrt(1.0 + std::log(4.0) / std::log(16.0)), 1e-6);
    config["rope_scaling"]["attention_factor"] = 1.5;  // given, it wins (Hugging Face's rule)
    EXPECT_EQ(parse_hf_config(config.dump(), "c").value().rope_attention_factor, 1.5f);
    config["rope_scaling"]["long_factor"] = {1.0, 2.0, 3.0};
    EXPECT_NE(config_error(config).find("rope_scaling.long_factor must be a list of 2 numbers"), std::string::npos);
    config["rope_scaling"]["long_factor"] = {1.0, -2.0};
    EXPECT_NE(config_error(config).find("rope_scaling.long_factor holds -2.0"), std::string::npos);
    config["rope_scaling"]["long_factor"] = {1.0, 2.0};
    config.erase("original_max_position_embeddings");
    EXPECT_NE(config_error(config).find("missing 'original_max_position_embeddings'"), std::string::npos);
}

TEST(HfConfig, ListOfEosIdsIsLeftOut) {
    json config = testing::tiny_config({});
    config["eos_token_id"] = {128001, 128008, 128009};
    EXPECT_FALSE(parse_hf_config(config.dump(), "c").value().eos_token_id.has_value());
}

// numpy's w.reshape(n_head, 2, d/2, ...).swapaxes(1, 2).reshape(w.shape), as llama.cpp's converter permutes.
TEST(TensorPlan, RopeRowOrderInterleavesEachHeadsHalves) {
    std::vector<int64_t> order;
    for (int64_t row = 0; row < 16; ++row) order.push_back(rope_source_row(row, 16, 2));
    EXPECT_EQ(order, (std::vector<int64_t>{0, 4, 1, 5, 2, 6, 3, 7, 8, 12, 9, 13, 10, 14, 11, 15}));
    for (int64_t num_heads : {1, 3, 8}) {
        const int64_t num_rows = num_heads * 64;
        std::vector<int64_t> sources;
        for (int64_t row = 0; row < num_rows; ++row) sources.push_back(rope_source_row(row, num_rows, num_heads));
        std::vector<int64_t> sorted = sources;
        std::sort(sorted.begin(), sorted.end());
        std::vector<int64_t> identity(static_cast<size_t>(num_rows));
        std::iota(identity.begin(), identity.end(), 0);
        EXPECT_EQ(sorted, identity) << "a permutation for " << num_heads << " heads";
    }
}

TEST(TensorPlan, LlamaPermutesQkAndQwen2AddsBiases) {
    HfConfig config = parse_hf_config(testing::tiny_config({}).dump(), "c").value();
    std::vector<TensorPlan> plans = plan_tensors(config);
    auto find = [&](const std::string& gguf_name) {
        return *std::find_if(plans.begin(), plans.end(), [&](const auto& plan) { return plan.gguf_name == gguf_name; });
    };
    EXPECT_EQ(find("blk.1.attn_q.weight").rope_heads, 4);
    EXPECT_EQ(find("blk.1.attn_k.weight").rope_heads, 2);
    EXPECT_EQ(find("blk.1.attn_v.weight").rope_heads, 0);
    EXPECT_EQ(find("blk.0.ffn_down.weight").hf_shape, (std::vector<int64_t>{16, 24}));
    EXPECT_TRUE(find("output_norm.weight").keep_f32);
    EXPECT_TRUE(find("output.weight").optional);
    EXPECT_EQ(plans.size(), 3u + 2u * 9u);
    config.architecture = "qwen2";
    plans = plan_tensors(config);
    EXPECT_EQ(plans.size(), 3u + 2u * 12u);
    EXPECT_EQ(find("blk.1.attn_q.weight").rope_heads, 0);
    EXPECT_EQ(find("blk.1.attn_k.bias").hf_shape, (std::vector<int64_t>{8}));
    EXPECT_TRUE(is_skipped_hf_tensor("model.layers.0.self_attn.rotary_emb.inv_freq"));
}

HfConfig bpe_config(int64_t vocab_size, const std::string& architecture = "llama") {
    HfConfig config;
    config.vocab_size = vocab_size;
    config.architecture = architecture;
    return config;
}

TEST(BpeVocab, TokensTypesMergesAndPadding) {
    json tokenizer = testing::tiny_bpe_tokenizer();
    // The pair form, with a space inside a part.
    tokenizer["model"]["merges"] = json::array({json::array({"a", "b"}), json::array({"ab", "c d"})});
    tokenizer["added_tokens"].push_back({{"id", 7}, {"content", "\xe2\x96\x81hi"}, {"special", false}});
    tokenizer["added_tokens"].push_back({{"id", 8}, {"content", "<|im_start|>"}, {"special", false}});
    auto vocab = read_bpe_vocab(tokenizer, "tokenizer.json", bpe_config(10));
    ASSERT_TRUE(vocab.is_ok()) << vocab.status().message();
    const GgufVocab& v = vocab.value();
    EXPECT_EQ(v.model, "gpt2");
    EXPECT_EQ(v.pre, "gpt-2");
    EXPECT_EQ(v.tokens, (std::vector<std::string>{"a", "b", "c", "d", "ab", "abc", "<|end|>", " hi", "<|im_start|>",
                                                  "[PAD9]"}));
    using T = TokenType;
    const std::vector<int32_t> expected_types = {
        int32_t(T::kNormal), int32_t(T::kNormal), int32_t(T::kNormal),      int32_t(T::kNormal),
        int32_t(T::kNormal), int32_t(T::kNormal), int32_t(T::kControl),     int32_t(T::kUserDefined),
        int32_t(T::kControl), int32_t(T::kUnused)};
    EXPECT_EQ(v.token_types, expected_types);
    EXPECT_EQ(v.merges, (std::vector<std::string>{"a b", "ab c\xc4\xa0" "d"}));
    EXPECT_TRUE(v.scores.empty());
}

TEST(BpeVocab, RecognisesPreTokenizers) {
    const std::string tail = R"(| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
    const std::string llama3 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3})" + tail;
    const std::string qwen2 = R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N})" + tail;
    auto pre_for = [](const std::string& regex, const std::string& architecture) {
        json tokenizer = testing::tiny_bpe_tokenizer();
        tokenizer["pre_tokenizer"] = {
            {"type", "Sequence"},
            {"pretokenizers",
             {{{"type", "Split"}, {"pattern", {{"Regex", regex}}}, {"behavior", "Isolated"}},
              {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
        return read_bpe_vocab(tokenizer, "t", bpe_config(8, architecture)).value().pre;
    };
    EXPECT_EQ(pre_for(llama3, "qwen2"), "llama-bpe");
    EXPECT_EQ(pre_for(qwen2, "llama"), "qwen2");
    EXPECT_EQ(pre_for("\\w+", "qwen2"), "qwen2");      // unrecognised: the family's own
    EXPECT_EQ(pre_for("\\w+", "llama"), "llama-bpe");
}

TEST(BpeVocab, RejectsWhatItCannotConvert) {
    auto error_of = [](const json& tokenizer, int64_t vocab_size = 8) {
        auto vocab = read_bpe_vocab(tokenizer, "tokenizer.json", bpe_config(vocab_size));
        return vocab.is_ok() ? std::string() : vocab.status().message();
    };
    json tokenizer = testing::tiny_bpe_tokenizer();
    tokenizer["model"]["byte_fallback"] = true;
    EXPECT_NE(error_of(tokenizer).find("not a byte-level BPE"), std::string::npos);
    tokenizer = testing::tiny_bpe_tokenizer();
    tokenizer["model"]["type"] = "Unigram";
    EXPECT_NE(error_of(tokenizer).find("model.type is not BPE"), std::string::npos);
    EXPECT_NE(error_of(testing::tiny_bpe_tokenizer(), 5).find("outside the model's vocab_size 5"), std::string::npos);
    tokenizer = testing::tiny_bpe_tokenizer();
    tokenizer["model"]["vocab"]["e"] = 0;
    EXPECT_NE(error_of(tokenizer).find("two tokens have id 0"), std::string::npos);
    tokenizer = testing::tiny_bpe_tokenizer();
    tokenizer["model"]["merges"] = json::array({json::array({"a", "b", "c"})});
    EXPECT_NE(error_of(tokenizer).find("merge"), std::string::npos);
    tokenizer = testing::tiny_bpe_tokenizer();
    tokenizer["added_tokens"] = {{{"id", 99}, {"content", "<x>"}}};
    EXPECT_NE(error_of(tokenizer).find("added token"), std::string::npos);
}

TEST(BpeVocab, SpecialLookingTokens) {
    EXPECT_TRUE(looks_like_special_token("<|endoftext|>"));
    EXPECT_TRUE(looks_like_special_token("<pad>"));
    EXPECT_TRUE(looks_like_special_token("<unused12>"));
    EXPECT_FALSE(looks_like_special_token("<tool_call>"));
    EXPECT_FALSE(looks_like_special_token("hello"));
}

}  // namespace
}  // namespace tern

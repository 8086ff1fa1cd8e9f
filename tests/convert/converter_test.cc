// tern convert on tiny folders written by the test: tensor names, shapes, types and row order in the GGUF, the
// metadata model/hparams.cc reads, sharded input, and a clear error (and no output file) for what cannot convert.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "base/fp16.h"
#include "convert/converter.h"
#include "convert/hf_config.h"
#include "convert/tensor_plan.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "synth/presets.h"
#include "tiny_hf_model.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using testing::TinyModelSpec;
using testing::TinyTensor;

// The GGUF tensor's elements as floats.
std::vector<float> gguf_values(const GgufTensorInfo& info) {
    std::vector<float> values(static_cast<size_t>(info.num_elements));
    for (int64_t idx = 0; idx < info.num_elements; ++idx) {
        uint16_t half = 0;
        switch (info.type) {
            case DType::kF32: std::memcpy(&values[idx], info.data + idx * 4, 4); break;
            case DType::kF16: std::memcpy(&half, info.data + idx * 2, 2); values[idx] = fp16_to_fp32(half); break;
            default: std::memcpy(&half, info.data + idx * 2, 2); values[idx] = bf16_to_fp32(half); break;
        }
    }
    return values;
}

// Rows of `tensor` in llama's RoPE order, written out from the definition: within each head, GGUF row 2i + j is
// Hugging Face row j * (d/2) + i.
std::vector<float> interleave_halves(const TinyTensor& tensor, int64_t num_heads) {
    const int64_t row_length = tensor.shape[1];
    const int64_t head_rows = tensor.shape[0] / num_heads;
    std::vector<float> out;
    for (int64_t head = 0; head < num_heads; ++head) {
        for (int64_t pair = 0; pair < head_rows / 2; ++pair) {
            for (int64_t half = 0; half < 2; ++half) {
                const int64_t source = head * head_rows + half * (head_rows / 2) + pair;
                out.insert(out.end(), tensor.values.begin() + source * row_length,
                           tensor.values.begin() + (source + 1) * row_length);
            }
        }
    }
    return out;
}

class ConvertTiny : public ::testing::Test {
protected:
    void SetUp() override { dir_ = testing::scratch_dir(testing::current_test_name()); }

    fs::path hf_dir() const { return dir_ / "hf"; }
    std::string out_path() const { return (dir_ / "out.gguf").string(); }

    Result<ConvertSummary> convert(DType type = DType::kF32) {
        return convert_hf_to_gguf(hf_dir().string(), out_path(), ConvertOptions{type});
    }

    std::unique_ptr<GgufFile> convert_and_open(DType type = DType::kF32) {
        auto summary = convert(type);
        EXPECT_TRUE(summary.is_ok()) << summary.status().message();
        auto file = GgufFile::open(out_path());
        EXPECT_TRUE(file.is_ok()) << file.status().message();
        return file.is_ok() ? std::move(file).value() : nullptr;
    }

    // The conversion fails with `needle` in its message and leaves no output behind.
    void expect_failure(const std::string& needle) {
        auto summary = convert();
        ASSERT_FALSE(summary.is_ok()) << "expected an error containing '" << needle << "'";
        EXPECT_NE(summary.status().message().find(needle), std::string::npos) << summary.status().message();
        // Nor a temporary beside it (the writer's `<out>.partial-<pid>`).
        const std::string out_name = fs::path(out_path()).filename().string();
        for (const auto& entry : fs::directory_iterator(fs::path(out_path()).parent_path())) {
            EXPECT_NE(entry.path().filename().string().rfind(out_name, 0), 0u) << "left behind: " << entry.path();
        }
    }

    fs::path dir_;
};

TEST_F(ConvertTiny, LlamaTensorsMetadataAndRowOrder) {
    const TinyModelSpec spec;
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_string("general.architecture"), "llama");
    EXPECT_EQ(file->get_int("llama.embedding_length"), 16);
    EXPECT_EQ(file->get_int("llama.attention.head_count_kv"), 2);
    EXPECT_EQ(file->get_int("llama.context_length"), 64);
    EXPECT_EQ(file->get_int("llama.rope.dimension_count"), 4);
    EXPECT_EQ(file->get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(file->get_int("tokenizer.ggml.bos_token_id"), 1);
    ASSERT_EQ(file->tensors().size(), tensors.size());
    const HfConfig config = parse_hf_config(testing::tiny_config(spec).dump(), "config.json").value();
    for (const TensorPlan& plan : plan_tensors(config)) {
        const GgufTensorInfo* info = file->find_tensor(plan.gguf_name);
        ASSERT_NE(info, nullptr) << plan.gguf_name;
        const TinyTensor& source = tensors.at(plan.hf_name);
        EXPECT_EQ(gguf_values(*info), plan.rope_heads > 0 ? interleave_halves(source, plan.rope_heads) : source.values)
            << plan.gguf_name;
    }
    const GgufTensorInfo* q = file->find_tensor("blk.1.attn_q.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q->dims, (std::vector<int64_t>{16, 16}));
    EXPECT_EQ(gguf_values(*q), interleave_halves(tensors.at("model.layers.1.self_attn.q_proj.weight"), 4));
    const GgufTensorInfo* k = file->find_tensor("blk.0.attn_k.weight");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->dims, (std::vector<int64_t>{16, 8}));
    EXPECT_EQ(gguf_values(*k), interleave_halves(tensors.at("model.layers.0.self_attn.k_proj.weight"), 2));
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.0.attn_v.weight")),
              tensors.at("model.layers.0.self_attn.v_proj.weight").values);
    EXPECT_EQ(file->find_tensor("blk.1.ffn_down.weight")->dims, (std::vector<int64_t>{24, 16}));
    EXPECT_EQ(gguf_values(*file->find_tensor("output.weight")), tensors.at("lm_head.weight").values);
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.0.ffn_norm.weight")),
              tensors.at("model.layers.0.post_attention_layernorm.weight").values);

    auto model = Model::load(out_path());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(model.value()->hparams().vocab_size, 8);
    EXPECT_EQ(model.value()->hparams().num_kv_heads, 2);
}

TEST_F(ConvertTiny, HalfWeightTypesRoundEveryMatrix) {
    TinyModelSpec spec;
    spec.matrix_dtype = "BF16";
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    for (DType type : {DType::kF16, DType::kBF16}) {
        auto file = convert_and_open(type);
        ASSERT_NE(file, nullptr);
        EXPECT_EQ(file->get_int("general.file_type"), type == DType::kF16 ? 1 : 32);
        const GgufTensorInfo* up = file->find_tensor("blk.0.ffn_up.weight");
        ASSERT_EQ(up->type, type);
        const std::vector<float>& source = tensors.at("model.layers.0.mlp.up_proj.weight").values;
        std::vector<float> expected;
        for (float value : source) {
            expected.push_back(type == DType::kF16 ? fp16_to_fp32(fp32_to_fp16(value)) : value);  // bf16 is exact
        }
        EXPECT_EQ(gguf_values(*up), expected);
        EXPECT_EQ(file->find_tensor("blk.0.attn_norm.weight")->type, DType::kF32);
        EXPECT_TRUE(Model::load(out_path()).is_ok());
    }
}

TEST_F(ConvertTiny, Qwen2KeepsRowOrderAndAddsBiases) {
    TinyModelSpec spec;
    spec.architecture = "Qwen2ForCausalLM";
    spec.tie = true;
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_string("general.architecture"), "qwen2");
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.1.attn_q.weight")),
              tensors.at("model.layers.1.self_attn.q_proj.weight").values);
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.1.attn_k.bias")),
              tensors.at("model.layers.1.self_attn.k_proj.bias").values);
    EXPECT_EQ(file->find_tensor("output.weight"), nullptr);  // tied
    auto model = Model::load(out_path());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_TRUE(model.value()->weights().output_tied);
}

TEST_F(ConvertTiny, Qwen3AddsHeadNormsAndWideHeads) {
    TinyModelSpec spec;
    spec.architecture = "Qwen3ForCausalLM";
    spec.explicit_head_dim = 8;  // 4 heads of 8 over a hidden size of 16, as Qwen3's 16 heads of 128 over 1024
    spec.tie = true;
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_string("general.architecture"), "qwen3");
    EXPECT_EQ(file->get_int("qwen3.attention.key_length"), 8);
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.1.attn_k_norm.weight")),
              tensors.at("model.layers.1.self_attn.k_norm.weight").values);
    EXPECT_EQ(file->find_tensor("blk.0.attn_q.bias"), nullptr);
    auto model = Model::load(out_path());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(model.value()->hparams().q_dim(), 32);
}

TEST_F(ConvertTiny, Phi3KeepsItsFusedMatrices) {
    TinyModelSpec spec;
    spec.architecture = "Phi3ForCausalLM";
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_string("general.architecture"), "phi3");
    // Rows as Hugging Face holds them: q | k | v and gate | up, no permutation (phi3 rotates halves).
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.0.attn_qkv.weight")),
              tensors.at("model.layers.0.self_attn.qkv_proj.weight").values);
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.1.ffn_up.weight")),
              tensors.at("model.layers.1.mlp.gate_up_proj.weight").values);
    auto model = Model::load(out_path());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
}

// Phi-3 128k's LongRoPE, as llama.cpp's converter writes it: both factor lists as tensors, the original context and
// the attention factor sqrt(1 + ln(64 / 16) / ln(16)) as metadata. The model takes the long factors for its full
// context and the short ones for a context within the original.
TEST_F(ConvertTiny, Phi3LongRopeFactorsBecomeTensors) {
    TinyModelSpec spec;
    spec.architecture = "Phi3ForCausalLM";
    testing::write_tiny_model(hf_dir(), spec);
    nlohmann::json config = testing::tiny_config(spec);
    const std::vector<float> long_factors = {1.0f, 3.5f}, short_factors = {1.0f, 1.25f};  // head_dim 4: two pairs
    config["original_max_position_embeddings"] = 16;
    config["rope_scaling"] = {{"type", "longrope"}, {"long_factor", long_factors}, {"short_factor", short_factors}};
    testing::write_text(hf_dir() / "config.json", config.dump());
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    ASSERT_NE(file->find_tensor("rope_factors_long.weight"), nullptr);
    ASSERT_NE(file->find_tensor("rope_factors_short.weight"), nullptr);
    EXPECT_EQ(gguf_values(*file->find_tensor("rope_factors_long.weight")), long_factors);
    EXPECT_EQ(gguf_values(*file->find_tensor("rope_factors_short.weight")), short_factors);
    EXPECT_EQ(file->get_int("phi3.rope.scaling.original_context_length"), 16);
    EXPECT_NEAR(*file->get_float("phi3.rope.scaling.attn_factor"), std::sqrt(1.0 + std::log(4.0) / std::log(16.0)),
                1e-6);
    EXPECT_FALSE(file->get_string("phi3.rope.scaling.type").has_value());
    for (const auto& [context, expected] : {std::pair{int64_t{0}, long_factors}, std::pair{int64_t{16}, short_factors},
                                            std::pair{int64_t{17}, long_factors}}) {
        ModelOptions options;
        options.context_length = context;
        auto model = Model::load(out_path(), options);
        ASSERT_TRUE(model.is_ok()) << model.status().message();
        EXPECT_EQ(model.value()->weights().rope_freq_factors, expected) << "context " << context;
        EXPECT_EQ(model.value()->hparams().rope_original_context, 16);
    }
}

// Gemma: its norms become 1 + w (all six kinds), the window and soft caps reach the metadata, and the file loads
// as the architecture it names.
TEST_F(ConvertTiny, GemmaNormsGainOneAndWindowsReachTheMetadata) {
    for (const char* architecture : {"Gemma2ForCausalLM", "Gemma3ForCausalLM"}) {
        SCOPED_TRACE(architecture);
        TinyModelSpec spec;
        spec.architecture = architecture;
        spec.explicit_head_dim = 8;
        spec.tie = true;
        fs::remove_all(hf_dir());
        const auto tensors = testing::write_tiny_model(hf_dir(), spec);
        auto file = convert_and_open();
        ASSERT_NE(file, nullptr);
        const bool gemma3 = std::string(architecture) == "Gemma3ForCausalLM";
        const std::string arch = gemma3 ? "gemma3" : "gemma2";
        EXPECT_EQ(file->get_string("general.architecture"), arch);
        EXPECT_EQ(file->get_int(arch + ".attention.sliding_window"), 8);
        const std::vector<std::pair<std::string, std::string>> norms = {
            {"model.norm.weight", "output_norm.weight"},
            {"model.layers.1.input_layernorm.weight", "blk.1.attn_norm.weight"},
            {"model.layers.1.post_attention_layernorm.weight", "blk.1.post_attention_norm.weight"},
            {"model.layers.1.pre_feedforward_layernorm.weight", "blk.1.ffn_norm.weight"},
            {"model.layers.1.post_feedforward_layernorm.weight", "blk.1.post_ffw_norm.weight"}};
        for (const auto& [hf_name, gguf_name] : norms) {
            std::vector<float> plus_one = tensors.at(hf_name).values;
            for (float& value : plus_one) value += 1.0f;
            EXPECT_EQ(gguf_values(*file->find_tensor(gguf_name)), plus_one) << gguf_name;
        }
        EXPECT_EQ(gguf_values(*file->find_tensor("blk.0.attn_q.weight")),  // no RoPE permutation: halves
                  tensors.at("model.layers.0.self_attn.q_proj.weight").values);
        auto model = Model::load(out_path());
        ASSERT_TRUE(model.is_ok()) << model.status().message();
        const HParams& hp = model.value()->hparams();
        EXPECT_EQ(hp.sliding_window, 8);
        EXPECT_EQ(hp.attention_softcap, gemma3 ? 0.0f : 50.0f);
        EXPECT_EQ(hp.logit_softcap, gemma3 ? 0.0f : 30.0f);
        EXPECT_EQ(hp.rope_freq_base_sliding, gemma3 ? 10000.0f : 0.0f);
        EXPECT_TRUE(hp.has_post_norms());
    }
}

// A scalar metadata value as text, to compare two files' metadata.
std::string metadata_text(const GgufValue& value) {
    std::string text = std::to_string(value.int_value) + "/" + std::to_string(value.float_value) + "/" +
                       value.string_value + "/" + std::to_string(value.array.size());
    for (const GgufValue& item : value.array) text += "," + metadata_text(item);
    return text;
}

// Gemma 3's multimodal checkpoints (Gemma3ForConditionalGeneration): the sizes under text_config with
// Gemma3TextConfig's defaults for what it leaves out, the language model's tensors under "language_model." in both
// layouts transformers has saved, a vision tower to leave out. Each converts to the same file as the text-only
// checkpoint of the same weights; a tensor that is neither the language model's nor the vision tower's is still
// refused.
TEST_F(ConvertTiny, Gemma3MultimodalConvertsItsTextModel) {
    TinyModelSpec spec;
    spec.architecture = "Gemma3ForCausalLM";
    spec.explicit_head_dim = 8;
    spec.tie = true;
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    auto text_only = convert_and_open();
    ASSERT_NE(text_only, nullptr);
    const fs::path text_only_path = dir_ / "text-only.gguf";
    fs::rename(out_path(), text_only_path);
    auto reference = GgufFile::open(text_only_path.string());
    ASSERT_TRUE(reference.is_ok());

    nlohmann::json text_config = testing::tiny_config(spec);
    text_config.erase("architectures");
    for (const char* key : {"rope_theta", "rope_local_base_freq", "query_pre_attn_scalar"}) {
        text_config.erase(key);  // their Gemma3TextConfig defaults: 1e6, 1e4 and 256 (head_dim is 8 here, so keep it)
    }
    text_config["query_pre_attn_scalar"] = spec.head_dim();
    const nlohmann::json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                                   {"model_type", "gemma3"},
                                   {"eos_token_id", {1, 2}},
                                   {"text_config", text_config},
                                   {"vision_config", {{"hidden_size", 4}, {"model_type", "siglip_vision_model"}}}};
    for (const bool new_layout : {false, true}) {
        SCOPED_TRACE(new_layout ? "model.language_model." : "language_model.model.");
        std::map<std::string, TinyTensor> renamed;
        for (const auto& [name, tensor] : tensors) {
            const std::string rest = name.substr(std::string("model.").size());
            renamed[new_layout ? "model.language_model." + rest : "language_model.model." + rest] = tensor;
        }
        const std::string vision = new_layout ? "model.vision_tower." : "vision_tower.";
        const std::string projector = new_layout ? "model.multi_modal_projector." : "multi_modal_projector.";
        renamed[vision + "vision_model.embeddings.patch_embedding.weight"] = {{4, 3}, std::vector<float>(12, 0.5f), "F32"};
        renamed[projector + "mm_input_projection_weight"] = {{4, 16}, std::vector<float>(64, 0.25f), "F32"};
        fs::remove_all(hf_dir());
        testing::write_text(hf_dir() / "config.json", config.dump(2));
        testing::write_bytes(hf_dir() / "model.safetensors", testing::safetensors_of(renamed));
        testing::write_text(hf_dir() / "tokenizer.json", testing::tiny_bpe_tokenizer().dump());
        auto file = convert_and_open();
        ASSERT_NE(file, nullptr);
        ASSERT_EQ(file->tensors().size(), reference.value()->tensors().size());
        for (const GgufTensorInfo& expected : reference.value()->tensors()) {
            const GgufTensorInfo* actual = file->find_tensor(expected.name);
            ASSERT_NE(actual, nullptr) << expected.name;
            EXPECT_EQ(actual->dims, expected.dims) << expected.name;
            EXPECT_EQ(gguf_values(*actual), gguf_values(expected)) << expected.name;
        }
        for (const auto& [key, value] : reference.value()->metadata()) {
            if (key == "general.name") continue;
            const auto found = std::find_if(file->metadata().begin(), file->metadata().end(),
                                            [&](const auto& entry) { return entry.first == key; });
            ASSERT_NE(found, file->metadata().end()) << key;
            EXPECT_EQ(metadata_text(found->second), metadata_text(value)) << key;
        }
        fs::remove(out_path());
        renamed["image_newline"] = {{4}, std::vector<float>(4, 1.0f), "F32"};
        testing::write_bytes(hf_dir() / "model.safetensors", testing::safetensors_of(renamed));
        expect_failure("tensor 'image_newline' has no place in a gemma3 model");
    }
}

// Mixtral: each kind of expert matrix stacked, expert after expert, into llama.cpp's 3-D tensor; the router as is.
TEST_F(ConvertTiny, MixtralStacksItsExperts) {
    TinyModelSpec spec;
    spec.architecture = "MixtralForCausalLM";
    const auto tensors = testing::write_tiny_model(hf_dir(), spec);
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_string("general.architecture"), "llama");
    EXPECT_EQ(file->get_int("llama.expert_count"), 4);
    EXPECT_EQ(file->get_int("llama.expert_used_count"), 2);
    const GgufTensorInfo* down = file->find_tensor("blk.1.ffn_down_exps.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->dims, (std::vector<int64_t>{spec.ffn, spec.hidden, 4}));
    std::vector<float> stacked;
    for (int expert = 0; expert < 4; ++expert) {
        const std::string name = "model.layers.1.block_sparse_moe.experts." + std::to_string(expert) + ".w2.weight";
        const auto& part = tensors.at(name);
        stacked.insert(stacked.end(), part.values.begin(), part.values.end());
    }
    EXPECT_EQ(gguf_values(*down), stacked);
    EXPECT_EQ(gguf_values(*file->find_tensor("blk.0.ffn_gate_inp.weight")),
              tensors.at("model.layers.0.block_sparse_moe.gate.weight").values);
    auto model = Model::load(out_path());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(model.value()->hparams().num_experts, 4);
    EXPECT_EQ(model.value()->hparams().expert_ffn_dim, spec.ffn);
}

// A Gemma whose query_pre_attn_scalar GGUF readers would not derive is refused, naming the key.
TEST_F(ConvertTiny, GemmaWithAnUnusualAttentionScaleIsRefused) {
    TinyModelSpec spec;
    spec.architecture = "Gemma2ForCausalLM";
    spec.explicit_head_dim = 8;
    testing::write_tiny_model(hf_dir(), spec);
    nlohmann::json config = testing::tiny_config(spec);
    config["query_pre_attn_scalar"] = 12;
    testing::write_text(hf_dir() / "config.json", config.dump());
    auto summary = convert();
    ASSERT_FALSE(summary.is_ok());
    EXPECT_NE(summary.status().message().find("query_pre_attn_scalar 12"), std::string::npos)
        << summary.status().message();
}

TEST_F(ConvertTiny, ShardedCheckpointConvertsLikeOneFile) {
    const auto tensors = testing::write_tiny_model(hf_dir(), {});
    ASSERT_TRUE(convert().is_ok());
    std::ifstream single_stream(out_path(), std::ios::binary);
    const std::string single((std::istreambuf_iterator<char>(single_stream)), {});
    fs::remove(hf_dir() / "model.safetensors");
    std::map<std::string, TinyTensor> first, second;
    nlohmann::json weight_map;
    for (const auto& [name, tensor] : tensors) {
        const bool in_first = name.find("layers.1.") == std::string::npos;
        (in_first ? first : second)[name] = tensor;
        weight_map[name] = in_first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
    }
    testing::write_bytes(hf_dir() / "model-00001-of-00002.safetensors", testing::safetensors_of(first));
    testing::write_bytes(hf_dir() / "model-00002-of-00002.safetensors", testing::safetensors_of(second));
    testing::write_text(hf_dir() / "model.safetensors.index.json", nlohmann::json{{"weight_map", weight_map}}.dump());
    ASSERT_TRUE(convert().is_ok());
    std::ifstream sharded_stream(out_path(), std::ios::binary);
    const std::string sharded((std::istreambuf_iterator<char>(sharded_stream)), {});
    EXPECT_TRUE(single == sharded) << "sharded input gave a different file";
}

TEST_F(ConvertTiny, RopeScalingBecomesTensorOrMetadata) {
    testing::write_tiny_model(hf_dir(), {});
    nlohmann::json config = testing::tiny_config({});
    config["rope_scaling"] = {{"rope_type", "llama3"}, {"factor", 8.0}, {"low_freq_factor", 1.0},
                              {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 16}};
    testing::write_text(hf_dir() / "config.json", config.dump());
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    const GgufTensorInfo* freqs = file->find_tensor("rope_freqs.weight");
    ASSERT_NE(freqs, nullptr);
    EXPECT_EQ(gguf_values(*freqs), llama3_rope_factors(4, 10000.0f, 8.0f, 1.0f, 4.0f, 16));
    EXPECT_TRUE(Model::load(out_path()).is_ok());
    config["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
    testing::write_text(hf_dir() / "config.json", config.dump());
    file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_string("llama.rope.scaling.type"), "linear");
    EXPECT_EQ(file->get_float("llama.rope.scaling.factor"), 4.0);
    auto model = Model::load(out_path());
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(model.value()->hparams().rope_position_scale, 0.25f);
}

TEST_F(ConvertTiny, TokenizerConfigSpecialTokensAndTemplate) {
    testing::write_tiny_model(hf_dir(), {});
    testing::write_text(hf_dir() / "tokenizer_config.json",
                        R"({"eos_token": {"content": "<|end|>"}, "bos_token": null, "add_bos_token": false,
                            "chat_template": "{{ messages }}"})");
    auto file = convert_and_open();
    ASSERT_NE(file, nullptr);
    EXPECT_EQ(file->get_int("tokenizer.ggml.eos_token_id"), 6);  // tokenizer_config.json wins over config.json's 2
    EXPECT_EQ(file->get_int("tokenizer.ggml.bos_token_id"), 1);
    EXPECT_EQ(file->get_bool("tokenizer.ggml.add_bos_token"), false);
    EXPECT_EQ(file->get_string("tokenizer.chat_template"), "{{ messages }}");
}

TEST_F(ConvertTiny, UnknownArchitecture) {
    testing::write_tiny_model(hf_dir(), {});
    nlohmann::json config = testing::tiny_config({});
    config["architectures"] = {"PhiForCausalLM"};
    testing::write_text(hf_dir() / "config.json", config.dump());
    expect_failure("unknown architecture PhiForCausalLM; tern converts the llama (with Mistral and Mixtral), qwen2, "
                   "qwen3, phi3, gemma2 and gemma3 (Gemma3ForCausalLM, and Gemma3ForConditionalGeneration's text "
                   "model) families");
}

TEST_F(ConvertTiny, MissingWrongOrExtraTensors) {
    auto tensors = testing::tiny_tensors({});
    testing::write_tiny_model(hf_dir(), {});
    auto rewrite = [&](const std::map<std::string, TinyTensor>& changed) {
        testing::write_bytes(hf_dir() / "model.safetensors", testing::safetensors_of(changed));
    };
    auto missing = tensors;
    missing.erase("model.layers.1.mlp.up_proj.weight");
    rewrite(missing);
    expect_failure("missing tensor 'model.layers.1.mlp.up_proj.weight'");
    auto wrong = tensors;
    wrong["model.layers.0.self_attn.k_proj.weight"].shape = {16, 8};
    rewrite(wrong);
    expect_failure(
        "tensor 'model.layers.0.self_attn.k_proj.weight' has shape [16, 8], but config.json implies [8, 16]");
    auto extra = tensors;
    extra["model.layers.0.self_attn.o_proj.bias"] = TinyTensor{{16}, std::vector<float>(16, 0.0f), "F32"};
    rewrite(extra);
    expect_failure("tensor 'model.layers.0.self_attn.o_proj.bias' has no place in a llama model");
    auto skipped = tensors;
    skipped["model.layers.0.self_attn.rotary_emb.inv_freq"] = TinyTensor{{2}, {1.0f, 0.01f}, "F32"};
    rewrite(skipped);
    EXPECT_TRUE(convert().is_ok());
}

TEST_F(ConvertTiny, MissingInputs) {
    expect_failure("no config.json");
    testing::write_tiny_model(hf_dir(), {});
    fs::remove(hf_dir() / "tokenizer.json");
    expect_failure("no tokenizer.model or tokenizer.json");
    testing::write_text(hf_dir() / "tokenizer.model", "not a sentencepiece model");
    expect_failure("not a SentencePiece model");
    fs::remove(hf_dir() / "tokenizer.model");
    fs::remove(hf_dir() / "model.safetensors");
    expect_failure("no model.safetensors or model.safetensors.index.json");
    testing::write_tiny_model(hf_dir(), {});
    testing::write_bytes(hf_dir() / "model.safetensors", testing::raw_safetensors("{\"x\": 1}", {}));
    expect_failure("model.safetensors: invalid safetensors file");
}

TEST_F(ConvertTiny, OnlyFloatOutputTypes) {
    testing::write_tiny_model(hf_dir(), {});
    auto summary = convert(DType::kQ8_0);
    ASSERT_FALSE(summary.is_ok());
    EXPECT_NE(summary.status().message().find("f32, f16 or bf16"), std::string::npos);
}

}  // namespace
}  // namespace tern

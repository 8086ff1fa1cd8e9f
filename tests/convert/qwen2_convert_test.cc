// A Qwen2-family folder through the byte-level BPE path: the test writes the tokenizer.json that Qwen2's own
// tokenizer files describe (rebuilt from the shared ggml-vocab-qwen2.gguf: vocab, merges as pairs, three special
// added tokens, Qwen2's split regex) next to tiny random weights. The converted vocabulary must equal the
// reference GGUF's, and tokenize llama.cpp's qwen2 golden cases exactly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "convert/converter.h"
#include "formats/gguf.h"
#include "model/model.h"
#include "tiny_hf_model.h"
#include "tokenizer/tokenizer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kQwen2Vocab = std::string(TERN_SHARED_DIR) + "/vocab/ggml-vocab-qwen2.gguf";
constexpr const char* kQwen2Split =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

std::string read_text(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// Qwen2's tokenizer.json as Hugging Face ships it, from the reference vocabulary: normal tokens in model.vocab,
// control tokens as special added tokens, unused (padding) ids absent.
json qwen2_tokenizer_json(const GgufFile& reference) {
    const auto* tokens = reference.get_array("tokenizer.ggml.tokens", GgufType::kString);
    const auto* types = reference.get_array("tokenizer.ggml.token_type", GgufType::kI32);
    const auto* merges = reference.get_array("tokenizer.ggml.merges", GgufType::kString);
    json vocab = json::object();
    json added = json::array();
    for (size_t id = 0; id < tokens->size(); ++id) {
        const std::string& text = (*tokens)[id].string_value;
        const int64_t type = (*types)[id].int_value;
        if (type == 1) vocab[text] = id;
        if (type == 3) added.push_back({{"id", id}, {"content", text}, {"special", true}, {"normalized", false}});
    }
    json merge_pairs = json::array();
    for (const GgufValue& merge : *merges) {
        const size_t space = merge.string_value.find(' ');
        merge_pairs.push_back({merge.string_value.substr(0, space), merge.string_value.substr(space + 1)});
    }
    return {{"version", "1.0"},
            {"added_tokens", added},
            {"normalizer", {{"type", "NFC"}}},
            {"pre_tokenizer",
             {{"type", "Sequence"},
              {"pretokenizers",
               {{{"type", "Split"}, {"pattern", {{"Regex", kQwen2Split}}}, {"behavior", "Isolated"}, {"invert", false}},
                {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}}}}}},
            {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}}},
            {"model", {{"type", "BPE"}, {"byte_fallback", false}, {"vocab", vocab}, {"merges", merge_pairs}}}};
}

class Qwen2Convert : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        auto reference = GgufFile::open(kQwen2Vocab);
        ASSERT_TRUE(reference.is_ok()) << reference.status().message();
        reference_ = std::move(reference).value().release();
        // Per process: ctest runs each test of this suite in its own process, possibly at the same time.
        const fs::path dir = testing::scratch_dir("qwen2-" + std::to_string(::getpid()));
        dir_ = new fs::path(dir);
        testing::TinyModelSpec spec;
        spec.architecture = "Qwen2ForCausalLM";
        spec.vocab = 151936;
        spec.hidden = 8;
        spec.heads = 2;
        spec.kv_heads = 1;
        spec.ffn = 8;
        spec.layers = 1;
        spec.tie = true;
        spec.matrix_dtype = "BF16";
        testing::write_tiny_model(dir / "hf", spec);
        json config = testing::tiny_config(spec);
        config["bos_token_id"] = 151643;
        config["eos_token_id"] = 151645;
        testing::write_text(dir / "hf" / "config.json", config.dump());
        testing::write_text(dir / "hf" / "tokenizer.json", qwen2_tokenizer_json(*reference_).dump());
        testing::write_text(dir / "hf" / "tokenizer_config.json",
                            json{{"eos_token", "<|im_end|>"}, {"pad_token", "<|endoftext|>"}, {"bos_token", nullptr},
                                 {"chat_template", "{% for m in messages %}<|im_start|>{{ m.content }}{% endfor %}"}}
                                .dump());
        out_path_ = new std::string((dir / "qwen2.gguf").string());
        auto summary = convert_hf_to_gguf((dir / "hf").string(), *out_path_, ConvertOptions{DType::kF32});
        ASSERT_TRUE(summary.is_ok()) << summary.status().message();
        auto converted = GgufFile::open(*out_path_);
        ASSERT_TRUE(converted.is_ok()) << converted.status().message();
        converted_ = std::move(converted).value().release();
    }

    static void TearDownTestSuite() {
        std::error_code error;
        if (dir_ != nullptr) fs::remove_all(*dir_, error);
        delete dir_;
        delete reference_;
        delete converted_;
        delete out_path_;
    }

    void SetUp() override { ASSERT_NE(converted_, nullptr) << "the conversion failed"; }

    static GgufFile* reference_;
    static GgufFile* converted_;
    static std::string* out_path_;
    static fs::path* dir_;
};

GgufFile* Qwen2Convert::reference_ = nullptr;
GgufFile* Qwen2Convert::converted_ = nullptr;
std::string* Qwen2Convert::out_path_ = nullptr;
fs::path* Qwen2Convert::dir_ = nullptr;

TEST_F(Qwen2Convert, VocabularyEqualsTheReference) {
    EXPECT_EQ(converted_->get_string("tokenizer.ggml.model"), "gpt2");
    EXPECT_EQ(converted_->get_string("tokenizer.ggml.pre"), "qwen2");
    for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges"}) {
        const GgufValue* expected = reference_->find(key);
        const GgufValue* actual = converted_->find(key);
        ASSERT_NE(actual, nullptr) << key;
        ASSERT_EQ(actual->array_type, expected->array_type) << key;
        ASSERT_EQ(actual->array.size(), expected->array.size()) << key;
        for (size_t idx = 0; idx < expected->array.size(); ++idx) {
            ASSERT_EQ(actual->array[idx].string_value, expected->array[idx].string_value) << key << "[" << idx << "]";
            ASSERT_EQ(actual->array[idx].int_value, expected->array[idx].int_value) << key << "[" << idx << "]";
        }
    }
    for (const char* key : {"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                            "tokenizer.ggml.padding_token_id"}) {
        EXPECT_EQ(converted_->get_int(key), reference_->get_int(key)) << key;
    }
    EXPECT_NE(converted_->get_string("tokenizer.chat_template").value_or("").find("<|im_start|>"), std::string::npos);
}

TEST_F(Qwen2Convert, TokenizesTheGoldenCasesLikeLlamaCpp) {
    auto tokenizer = Tokenizer::from_gguf(*converted_);
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    const std::string inputs = read_text(kQwen2Vocab + ".inp");
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::istringstream outputs(read_text(kQwen2Vocab + ".out"));
    size_t pos = 0;
    int num_cases = 0;
    for (std::string line; std::getline(outputs, line); ++num_cases) {
        const size_t next = inputs.find(separator, pos);
        const std::string text = inputs.substr(pos, next == std::string::npos ? std::string::npos : next - pos);
        pos = next == std::string::npos ? inputs.size() : next + separator.size();
        std::vector<int32_t> expected;
        std::istringstream words(line);
        for (int32_t id; words >> id;) expected.push_back(id);
        EXPECT_EQ(tokenizer.value()->encode(text, false, false), expected) << text;
    }
    EXPECT_GT(num_cases, 30);
    EXPECT_EQ(tokenizer.value()->encode("<|im_start|>hi<|im_end|>", false, true).front(), 151644);
}

TEST_F(Qwen2Convert, LoadsAndRuns) {
    auto model = Model::load(*out_path_);
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    EXPECT_EQ(model.value()->hparams().architecture, Architecture::kQwen2);
    EXPECT_EQ(model.value()->hparams().vocab_size, 151936);
    KvCache cache(model.value()->hparams(), 1, 4);
    ThreadPool pool(1);
    TokenBatch batch;
    batch.add(151644, 0, 0, false);
    batch.add(14990, 1, 0, true);
    std::vector<float> logits;
    ASSERT_TRUE(model.value()->forward(batch, &cache, &pool, &logits).is_ok());
    ASSERT_EQ(logits.size(), 151936u);
    for (float logit : logits) ASSERT_TRUE(std::isfinite(logit));
}

}  // namespace
}  // namespace tern

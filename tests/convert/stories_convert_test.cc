// stories260K's Hugging Face folder converted by tern against the reference stories260K-f32.gguf: the same greedy
// ids and logits (within 1e-5) for the reference prompts, the same tokenizer on every golden case, and half
// types that round each weight once.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <unistd.h>

#include "base/fp16.h"
#include "convert/converter.h"
#include "convert/hf_config.h"
#include "convert/hf_vocab.h"
#include "e2e/run_command.h"
#include "formats/gguf.h"
#include "formats/gguf_writer.h"
#include "model/model.h"
#include "tiny_hf_model.h"
#include "tokenizer/tokenizer.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

const fs::path kStoriesDir = fs::path(TERN_SHARED_DIR) / "models" / "stories260K";
const std::string kReferenceGguf = (kStoriesDir / "stories260K-f32.gguf").string();

// Each test process (ctest runs every test in its own) converts into its own folder, once per weight type.
class StoriesConvert : public ::testing::Test {
protected:
    static void SetUpTestSuite() {
        dir_ = new fs::path(fs::path(TERN_TEST_TMP) / "convert" / ("stories-" + std::to_string(::getpid())));
        fs::create_directories(*dir_);
    }
    static void TearDownTestSuite() {
        std::error_code error;
        fs::remove_all(*dir_, error);
        delete dir_;
    }

    static std::string converted(DType type) {
        const std::string path = (*dir_ / fmt::format("stories260K-{}.gguf", dtype_name(type))).string();
        if (fs::exists(path)) return path;
        auto summary = convert_hf_to_gguf((kStoriesDir / "hf").string(), path, ConvertOptions{type});
        EXPECT_TRUE(summary.is_ok()) << summary.status().message();
        return path;
    }

    static fs::path* dir_;
};

fs::path* StoriesConvert::dir_ = nullptr;

std::string read_text(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

class Greedy {
public:
    Greedy(Model& model, int64_t capacity) : model_(model), cache_(model.hparams(), 1, capacity) {}

    // Feeds tokens at the next positions; returns the logits after the last.
    const std::vector<float>& feed(const std::vector<int32_t>& tokens) {
        TokenBatch batch;
        for (size_t idx = 0; idx < tokens.size(); ++idx) {
            batch.add(tokens[idx], position_++, 0, idx + 1 == tokens.size());
        }
        EXPECT_TRUE(model_.forward(batch, &cache_, &pool_, &logits_).is_ok());
        return logits_;
    }

private:
    Model& model_;
    KvCache cache_;
    ThreadPool pool_{1};
    std::vector<float> logits_;
    int32_t position_ = 0;
};

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    EXPECT_EQ(a.size(), b.size());
    double worst = 0;
    for (size_t idx = 0; idx < std::min(a.size(), b.size()); ++idx) {
        worst = std::max(worst, static_cast<double>(std::abs(a[idx] - b[idx])));
    }
    return worst;
}

int32_t argmax(const std::vector<float>& logits) {
    return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

TEST_F(StoriesConvert, GreedyIdsAndLogitsMatchTheReferenceGguf) {
    auto reference = Model::load(kReferenceGguf);
    ASSERT_TRUE(reference.is_ok()) << reference.status().message();
    auto ours = Model::load(converted(DType::kF32));
    ASSERT_TRUE(ours.is_ok()) << ours.status().message();
    const nlohmann::json prompts = nlohmann::json::parse(read_text(kStoriesDir / "reference.json"));
    const int num_steps = prompts["n_gen"].get<int>();
    for (const nlohmann::json& prompt : prompts["prompts"]) {
        const auto prompt_tokens = prompt["prompt_tokens"].get<std::vector<int32_t>>();
        const int64_t capacity = static_cast<int64_t>(prompt_tokens.size()) + num_steps;
        Greedy reference_run(*reference.value(), capacity);
        Greedy our_run(*ours.value(), capacity);
        std::vector<float> reference_logits = reference_run.feed(prompt_tokens);
        std::vector<float> our_logits = our_run.feed(prompt_tokens);
        std::vector<int32_t> reference_ids, our_ids;
        for (int step = 0; step < num_steps; ++step) {
            ASSERT_LT(max_abs_diff(our_logits, reference_logits), 1e-5) << prompt["text"] << " step " << step;
            reference_ids.push_back(argmax(reference_logits));
            our_ids.push_back(argmax(our_logits));
            reference_logits = reference_run.feed({reference_ids.back()});
            our_logits = our_run.feed({our_ids.back()});
        }
        EXPECT_EQ(our_ids, reference_ids) << prompt["text"];
        EXPECT_EQ(our_ids, prompt["greedy_tokens"].get<std::vector<int32_t>>()) << prompt["text"];
    }
}

// The .inp/.out golden cases of llama.cpp's test-tokenizer-0 layout.
// stories260K's golden texts with the ids of `out_path` (by default llama.cpp's for the stories260K file).
std::vector<std::pair<std::string, std::vector<int32_t>>> golden_cases(const std::string& out_path =
                                                                           kReferenceGguf + ".out") {
    const std::string inputs = read_text(kReferenceGguf + ".inp");
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos <= inputs.size();) {
        const size_t next = inputs.find(separator, pos);
        texts.push_back(inputs.substr(pos, next == std::string::npos ? std::string::npos : next - pos));
        if (next == std::string::npos) break;
        pos = next + separator.size();
    }
    std::vector<std::pair<std::string, std::vector<int32_t>>> cases;
    std::istringstream outputs(read_text(out_path));
    size_t index = 0;
    for (std::string line; std::getline(outputs, line); ++index) {
        std::vector<int32_t> ids;
        std::istringstream words(line);
        for (int32_t id; words >> id;) ids.push_back(id);
        cases.emplace_back(index < texts.size() ? texts[index] : std::string(), std::move(ids));
    }
    return cases;
}

TEST_F(StoriesConvert, TokenizerMatchesTheReferenceGguf) {
    auto reference_file = GgufFile::open(kReferenceGguf);
    auto our_file = GgufFile::open(converted(DType::kF32));
    ASSERT_TRUE(reference_file.is_ok() && our_file.is_ok());
    for (const auto& [key, value] : reference_file.value()->metadata()) {
        if (!key.starts_with("tokenizer.")) continue;
        const GgufValue* ours = our_file.value()->find(key);
        ASSERT_NE(ours, nullptr) << key;
        EXPECT_EQ(ours->type, value.type) << key;
        ASSERT_EQ(ours->array.size(), value.array.size()) << key;
        for (size_t idx = 0; idx < value.array.size(); ++idx) {
            ASSERT_EQ(ours->array[idx].string_value, value.array[idx].string_value) << key << "[" << idx << "]";
            ASSERT_EQ(ours->array[idx].int_value, value.array[idx].int_value) << key << "[" << idx << "]";
            ASSERT_EQ(ours->array[idx].float_value, value.array[idx].float_value) << key << "[" << idx << "]";
        }
        EXPECT_EQ(ours->int_value, value.int_value) << key;
        EXPECT_EQ(ours->string_value, value.string_value) << key;
    }
    auto reference = Tokenizer::from_gguf(*reference_file.value());
    auto ours = Tokenizer::from_gguf(*our_file.value());
    ASSERT_TRUE(reference.is_ok() && ours.is_ok());
    const auto cases = golden_cases();
    ASSERT_EQ(cases.size(), 58u);
    for (const auto& [text, ids] : cases) {
        EXPECT_EQ(ours.value()->encode(text, false, false), ids) << text;
        EXPECT_EQ(ours.value()->encode(text, true, false), reference.value()->encode(text, true, false)) << text;
    }
}

// Gemma's SentencePiece tokenizers put no space before the text: converted under a Gemma config.json, stories260K's
// tokenizer.model is written with add_space_prefix false (as llama.cpp's converter writes Gemma's), so "Hello world"
// encodes as the llama file encodes it only once the space is typed.
TEST_F(StoriesConvert, GemmaSentencePieceAddsNoSpacePrefix) {
    std::map<std::string, std::vector<int32_t>> encoded;
    for (const char* architecture : {"LlamaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM"}) {
        SCOPED_TRACE(architecture);
        testing::TinyModelSpec spec;
        spec.architecture = architecture;
        spec.vocab = 512;
        auto config = parse_hf_config(testing::tiny_config(spec).dump(), "config.json");
        ASSERT_TRUE(config.is_ok()) << config.status().message();
        auto vocab = read_hf_vocab((kStoriesDir / "hf").string(), config.value());
        ASSERT_TRUE(vocab.is_ok()) << vocab.status().message();
        GgufWriter writer;
        write_vocab_metadata(vocab.value(), &writer);
        const std::string path = (*dir_ / (std::string(architecture) + "-vocab.gguf")).string();
        ASSERT_TRUE(writer.write(path).is_ok());
        auto file = GgufFile::open(path);
        ASSERT_TRUE(file.is_ok()) << file.status().message();
        const bool gemma = config.value().is_gemma();
        const std::optional<bool> prefix = file.value()->get_bool("tokenizer.ggml.add_space_prefix");
        EXPECT_EQ(prefix, gemma ? std::optional<bool>(false) : std::nullopt);
        auto tokenizer = Tokenizer::from_gguf(*file.value());
        ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
        encoded[architecture] = tokenizer.value()->encode("Hello world", false, false);
        if (gemma) {
            EXPECT_EQ(tokenizer.value()->encode(" Hello world", false, false), encoded["LlamaForCausalLM"]);
        }
    }
    EXPECT_NE(encoded["Gemma2ForCausalLM"], encoded["LlamaForCausalLM"]);
    EXPECT_EQ(encoded["Gemma3ForCausalLM"], encoded["Gemma2ForCausalLM"]);
}

// Gemma's SentencePiece against llama.cpp: a one-layer Gemma 3 folder carrying stories260K's tokenizer.model,
// converted, tokenizes every golden text as llama-server tokenized the same conversion
// (tests/convert/data/gemma-spm.out, written by scripts/gen-gemma-tokenizer-golden).
TEST_F(StoriesConvert, GemmaSentencePieceMatchesLlamaCpp) {
    testing::TinyModelSpec spec;
    spec.architecture = "Gemma3ForCausalLM";
    spec.vocab = 512;
    spec.layers = 1;
    spec.explicit_head_dim = 8;
    spec.tie = true;
    const fs::path folder = *dir_ / "gemma-spm";
    fs::remove_all(folder);
    testing::write_tiny_model(folder, spec);
    fs::remove(folder / "tokenizer.json");
    fs::copy_file(kStoriesDir / "hf" / "tokenizer.model", folder / "tokenizer.model");
    const std::string path = (*dir_ / "gemma-spm.gguf").string();
    auto summary = convert_hf_to_gguf(folder.string(), path, ConvertOptions{DType::kF32});
    ASSERT_TRUE(summary.is_ok()) << summary.status().message();
    auto file = GgufFile::open(path);
    ASSERT_TRUE(file.is_ok()) << file.status().message();
    auto tokenizer = Tokenizer::from_gguf(*file.value());
    ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
    const auto llama_file = golden_cases();
    const auto cases = golden_cases((fs::path(TERN_CONVERT_DATA_DIR) / "gemma-spm.out").string());
    ASSERT_EQ(cases.size(), llama_file.size());
    size_t differing = 0;
    for (size_t index = 0; index < cases.size(); ++index) {
        const auto& [text, ids] = cases[index];
        EXPECT_EQ(tokenizer.value()->encode(text, false, false), ids) << text;
        if (ids != llama_file[index].second) ++differing;
    }
    EXPECT_GT(differing, cases.size() / 2);  // the space prefix changes most texts' ids: the cases test something
}

TEST_F(StoriesConvert, HalfTypesRoundEachWeightOnce) {
    auto f32 = GgufFile::open(converted(DType::kF32));
    ASSERT_TRUE(f32.is_ok()) << f32.status().message();
    for (DType type : {DType::kF16, DType::kBF16}) {
        auto half = GgufFile::open(converted(type));
        ASSERT_TRUE(half.is_ok()) << half.status().message();
        ASSERT_EQ(half.value()->tensors().size(), f32.value()->tensors().size());
        for (const GgufTensorInfo& info : f32.value()->tensors()) {
            const GgufTensorInfo* rounded = half.value()->find_tensor(info.name);
            ASSERT_NE(rounded, nullptr) << info.name;
            ASSERT_EQ(rounded->type, info.dims.size() == 1 ? DType::kF32 : type) << info.name;
            if (info.dims.size() == 1) continue;
            for (int64_t idx = 0; idx < info.num_elements; ++idx) {
                float value = 0;
                uint16_t bits = 0;
                std::memcpy(&value, info.data + idx * 4, 4);
                std::memcpy(&bits, rounded->data + idx * 2, 2);
                ASSERT_EQ(bits, type == DType::kF16 ? fp32_to_fp16(value) : fp32_to_bf16(value)) << info.name << idx;
            }
        }
        auto model = Model::load(converted(type));
        ASSERT_TRUE(model.is_ok()) << model.status().message();
    }
}

TEST_F(StoriesConvert, CommandLine) {
    const std::string out = (*dir_ / "stories-cli.gguf").string();
    const auto ok = testing::run_tern("convert " + (kStoriesDir / "hf").string() + " " + out + " --type f32");
    ASSERT_EQ(ok.exit_code, 0) << ok.err;
    EXPECT_NE(ok.err.find("47 tensors"), std::string::npos) << ok.err;
    EXPECT_TRUE(read_text(out) == read_text(converted(DType::kF32))) << "the CLI and the library wrote different files";
    const auto bad_type = testing::run_tern("convert " + (kStoriesDir / "hf").string() + " " + out + " --type q4_0");
    EXPECT_EQ(bad_type.exit_code, 1);
    EXPECT_NE(bad_type.err.find("tern: error: unknown weight type 'q4_0'"), std::string::npos) << bad_type.err;
    const auto missing = testing::run_tern("convert /nonexistent/folder " + out);
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("no config.json"), std::string::npos) << missing.err;
}

}  // namespace
}  // namespace tern

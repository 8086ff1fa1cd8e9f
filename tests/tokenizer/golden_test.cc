// Tokenizer golden cases from llama.cpp: every ggml-vocab-*.gguf in the shared vocab folder that has .inp/.out
// files next to it, and the stories260K model. Each text must tokenize (no BOS, special text as plain text) to
// exactly the recorded ids.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "formats/gguf.h"
#include "tokenizer/detokenizer.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/unicode.h"

namespace tern {
namespace {

namespace fs = std::filesystem;

struct GoldenFile {
    std::string name;  // for the test name
    std::string path;  // the .gguf; cases are at path + ".inp" / ".out"

    friend void PrintTo(const GoldenFile& file, std::ostream* out) { *out << file.path; }
};

struct GoldenCase {
    std::string text;
    std::vector<int32_t> ids;
};

std::vector<GoldenFile> discover_golden_files() {
    std::vector<GoldenFile> files;
    const fs::path shared(TERN_SHARED_DIR);
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(shared / "vocab", error)) {
        const std::string file = entry.path().filename().string();
        if (!file.starts_with("ggml-vocab-") || !file.ends_with(".gguf")) continue;
        const std::string path = entry.path().string();
        if (!fs::exists(path + ".inp") || !fs::exists(path + ".out")) continue;
        files.push_back({file.substr(11, file.size() - 11 - 5), path});
    }
    std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
    const fs::path stories = shared / "models" / "stories260K" / "stories260K-f32.gguf";
    if (fs::exists(stories)) files.push_back({"stories260K", stories.string()});
    return files;
}

std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream buffer;
    buffer << in.rdbuf();
    return buffer.str();
}

// The .inp/.out layout of llama.cpp's test-tokenizer-0.
std::vector<GoldenCase> read_cases(const std::string& gguf_path) {
    const std::string inputs = read_file(gguf_path + ".inp");
    const std::string separator = "\n__ggml_vocab_test__\n";
    std::vector<std::string> texts;
    for (size_t pos = 0; pos < inputs.size();) {
        const size_t next = inputs.find(separator, pos);
        if (next == std::string::npos) {
            texts.push_back(inputs.substr(pos));
            break;
        }
        texts.push_back(inputs.substr(pos, next - pos));
        pos = next + separator.size();
    }
    std::ifstream outputs(gguf_path + ".out");
    std::vector<GoldenCase> cases;
    size_t index = 0;
    for (std::string line; std::getline(outputs, line); ++index) {
        GoldenCase golden;
        golden.text = index < texts.size() ? texts[index] : std::string();
        std::istringstream ids(line);
        for (int32_t id; ids >> id;) golden.ids.push_back(id);
        cases.push_back(std::move(golden));
    }
    EXPECT_EQ(texts.size(), cases.size()) << gguf_path << ": .inp and .out hold different numbers of cases";
    return cases;
}

std::string escaped(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
        if (c == '\n') {
            out += "\\n";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20) {
            out += "\\x" + std::to_string(c);
        } else {
            out.push_back(static_cast<char>(c));
        }
    }
    return out;
}

std::string join(const std::vector<int32_t>& ids) {
    std::string out;
    for (int32_t id : ids) {
        if (!out.empty()) out.push_back(' ');
        out += std::to_string(id);
    }
    return out;
}

bool is_valid_utf8(std::string_view text) {
    for (size_t pos = 0; pos < text.size();) {
        const unicode::Utf8Step step = unicode::next_utf8_sequence(text.substr(pos));
        if (step.status != unicode::Utf8Status::kValid) return false;
        pos += step.length;
    }
    return true;
}

class TokenizerGolden : public ::testing::TestWithParam<GoldenFile> {
protected:
    void SetUp() override {
        const auto start = std::chrono::steady_clock::now();
        auto gguf = GgufFile::open(GetParam().path);
        ASSERT_TRUE(gguf.is_ok()) << gguf.status().message();
        auto tokenizer = Tokenizer::from_gguf(*gguf.value());
        ASSERT_TRUE(tokenizer.is_ok()) << tokenizer.status().message();
        tokenizer_ = std::move(tokenizer).value();
        const auto elapsed = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start);
        std::printf("%s: %d tokens loaded in %.1f ms\n", GetParam().name.c_str(), tokenizer_->vocab_size(),
                    elapsed.count());
        cases_ = read_cases(GetParam().path);
        ASSERT_FALSE(cases_.empty());
    }

    std::unique_ptr<Tokenizer> tokenizer_;
    std::vector<GoldenCase> cases_;
};

TEST_P(TokenizerGolden, EncodesExactlyAsLlamaCpp) {
    int failures = 0;
    for (const GoldenCase& golden : cases_) {
        const std::vector<int32_t> ids = tokenizer_->encode(golden.text, false, false);
        if (ids == golden.ids) continue;
        ++failures;
        ADD_FAILURE() << "text '" << escaped(golden.text) << "'\n  expected: " << join(golden.ids)
                      << "\n  got:      " << join(ids);
    }
    EXPECT_EQ(failures, 0) << failures << " of " << cases_.size() << " cases differ";
}

// Streaming the golden ids one by one yields exactly the concatenated pieces whenever those form valid UTF-8.
TEST_P(TokenizerGolden, StreamingDetokenizerMatchesPieces) {
    for (const GoldenCase& golden : cases_) {
        std::string pieces;
        for (int32_t id : golden.ids) pieces += tokenizer_->token_to_piece(id);
        StreamingDetokenizer stream(*tokenizer_);
        std::string streamed;
        for (int32_t id : golden.ids) {
            const std::string chunk = stream.push(id);
            EXPECT_TRUE(is_valid_utf8(chunk)) << escaped(golden.text);
            streamed += chunk;
        }
        streamed += stream.flush();
        if (is_valid_utf8(pieces)) {
            EXPECT_EQ(streamed, pieces) << escaped(golden.text);
        }
    }
}

// Decoding the golden ids gives the input text back, tidied as llama.cpp tidies it for some BPE vocabularies.
TEST_P(TokenizerGolden, DecodeRestoresText) {
    for (const GoldenCase& golden : cases_) {
        if (!is_valid_utf8(golden.text)) continue;
        std::string expected = golden.text;
        if (tokenizer_->clean_spaces()) clean_up_spaces(expected);
        EXPECT_EQ(escaped(tokenizer_->decode(golden.ids)), escaped(expected));
    }
}

std::string test_name(const ::testing::TestParamInfo<GoldenFile>& info) {
    std::string name = info.param.name;
    for (char& c : name) {
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    }
    return name;
}

INSTANTIATE_TEST_SUITE_P(Shared, TokenizerGolden, ::testing::ValuesIn(discover_golden_files()), test_name);

// stories260K's reference.json: the prompts with BOS as the model saw them, and the generated text.
TEST(TokenizerStoriesReference, PromptIdsAndGeneratedText) {
    const fs::path folder = fs::path(TERN_SHARED_DIR) / "models" / "stories260K";
    if (!fs::exists(folder / "reference.json")) GTEST_SKIP() << "no stories260K reference";
    auto gguf = GgufFile::open((folder / "stories260K-f32.gguf").string());
    ASSERT_TRUE(gguf.is_ok()) << gguf.status().message();
    auto loaded = Tokenizer::from_gguf(*gguf.value());
    ASSERT_TRUE(loaded.is_ok()) << loaded.status().message();
    const Tokenizer& tokenizer = *loaded.value();
    const auto reference = nlohmann::json::parse(read_file((folder / "reference.json").string()));
    ASSERT_FALSE(reference.at("prompts").empty());
    for (const auto& prompt : reference.at("prompts")) {
        const auto text = prompt.at("text").get<std::string>();
        const auto prompt_ids = prompt.at("prompt_tokens").get<std::vector<int32_t>>();
        const auto generated = prompt.at("greedy_tokens").get<std::vector<int32_t>>();
        EXPECT_EQ(tokenizer.encode(text, true, false), prompt_ids) << text;

        // Decoded alone, the generated ids lose their leading space like SentencePiece's decode.
        EXPECT_EQ(tokenizer.decode(generated), prompt.at("greedy_text").get<std::string>());
        std::vector<int32_t> all(prompt_ids.begin() + 1, prompt_ids.end());
        all.insert(all.end(), generated.begin(), generated.end());
        const auto full_text = prompt.at("full_text").get<std::string>();
        EXPECT_EQ(tokenizer.decode(all), full_text);

        // Streamed after the prompt, they continue it exactly.
        StreamingDetokenizer stream(tokenizer);
        std::string streamed = tokenizer.decode(std::vector<int32_t>(prompt_ids.begin() + 1, prompt_ids.end()));
        for (int32_t id : generated) streamed += stream.push(id);
        EXPECT_EQ(streamed + stream.flush(), full_text);
    }
}

TEST(TokenizerGoldenSet, FindsTheSharedCases) {
    EXPECT_GE(discover_golden_files().size(), 2u) << "no golden vocabularies under " << TERN_SHARED_DIR;
}

}  // namespace
}  // namespace tern

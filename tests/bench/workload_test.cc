#include "bench/workload.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace tern::bench {
namespace {

std::string temp_file(const std::string& name, const std::string& content) {
    std::filesystem::create_directories(TERN_TEST_TMP);
    const std::string path = std::string(TERN_TEST_TMP) + "/" + name;
    std::ofstream(path) << content;
    return path;
}

int64_t count_words(const std::string& text) {
    std::istringstream stream(text);
    std::string word;
    int64_t count = 0;
    while (stream >> word) ++count;
    return count;
}

TEST(Workload, RandomTextPromptsHaveTheRequestedWordCountsAndASharedPrefix) {
    WorkloadOptions options;
    options.num_prompts = 20;
    options.input = LengthSpec::fixed(50, 0.2);
    options.output = LengthSpec::fixed(10);
    options.prefix_len = 16;
    options.seed = 5;
    Result<std::vector<RequestSpec>> specs = build_workload(options);
    ASSERT_TRUE(specs.is_ok()) << specs.status().message();
    ASSERT_EQ(specs.value().size(), 20u);
    const std::string prefix = specs.value()[0].prompt.substr(0, 40);
    bool lengths_vary = false;
    for (const RequestSpec& spec : specs.value()) {
        EXPECT_EQ(count_words(spec.prompt), spec.input_len);
        EXPECT_GE(spec.input_len, 16 + 40);
        EXPECT_LE(spec.input_len, 16 + 60);
        EXPECT_EQ(spec.output_len, 10);
        EXPECT_EQ(spec.prompt.substr(0, 40), prefix);
        lengths_vary = lengths_vary || spec.input_len != specs.value()[0].input_len;
    }
    EXPECT_TRUE(lengths_vary);
    EXPECT_NE(specs.value()[0].prompt, specs.value()[1].prompt);
}

TEST(Workload, SameSeedSameRequests) {
    WorkloadOptions options;
    options.num_prompts = 5;
    options.input = LengthSpec::fixed(30, 0.5);
    const auto first = build_workload(options).value();
    const auto second = build_workload(options).value();
    for (size_t idx = 0; idx < first.size(); ++idx) EXPECT_EQ(first[idx].prompt, second[idx].prompt);
    options.seed = 1;
    EXPECT_NE(build_workload(options).value()[0].prompt, first[0].prompt);
}

TEST(Workload, TokenIdPromptsAreExactAndInRange) {
    WorkloadOptions options;
    options.num_prompts = 10;
    options.input = LengthSpec::fixed(100);
    options.prefix_len = 8;
    options.prompt_kind = PromptKind::kTokenIds;
    options.vocab_size = 5000;
    const auto specs = build_workload(options).value();
    for (const RequestSpec& spec : specs) {
        EXPECT_TRUE(spec.prompt.empty());
        EXPECT_TRUE(spec.input_len_exact);
        ASSERT_EQ(spec.prompt_token_ids.size(), 108u);
        for (int32_t id : spec.prompt_token_ids) {
            EXPECT_GE(id, kFirstRandomTokenId);
            EXPECT_LT(id, 5000);
        }
        EXPECT_TRUE(std::equal(spec.prompt_token_ids.begin(), spec.prompt_token_ids.begin() + 8,
                               specs[0].prompt_token_ids.begin()));
    }
}

// stories260K's 512-token vocabulary is too small to skip the first 1000 ids: prompts skip its specials only.
TEST(Workload, TokenIdPromptsOfASmallVocabularySkipItsSpecials) {
    WorkloadOptions options;
    options.num_prompts = 4;
    options.input = LengthSpec::fixed(200);
    options.prompt_kind = PromptKind::kTokenIds;
    options.vocab_size = 512;
    std::set<int32_t> seen;
    const std::vector<RequestSpec> specs = build_workload(options).value();
    for (const RequestSpec& spec : specs) {
        seen.insert(spec.prompt_token_ids.begin(), spec.prompt_token_ids.end());
    }
    EXPECT_GE(*seen.begin(), 3);
    EXPECT_LT(*seen.rbegin(), 512);
    EXPECT_GT(seen.size(), 300u);
    options.vocab_size = 4;
    EXPECT_FALSE(build_workload(options).is_ok());
}

TEST(Workload, LengthsFileIsReplayedInOrder) {
    const std::string path = temp_file("lengths.csv", "input_len,output_len\n# a comment\n12,3\n7\t9\n\n20 1\n");
    Result<std::vector<std::pair<int64_t, int64_t>>> lengths = read_lengths_file(path);
    ASSERT_TRUE(lengths.is_ok()) << lengths.status().message();
    ASSERT_EQ(lengths.value().size(), 3u);
    EXPECT_EQ(lengths.value()[1], std::make_pair(int64_t{7}, int64_t{9}));
    WorkloadOptions options;
    options.num_prompts = 5;
    options.lengths_file = path;
    const auto specs = build_workload(options).value();
    const int64_t expected_inputs[] = {12, 7, 20, 12, 7};
    const int64_t expected_outputs[] = {3, 9, 1, 3, 9};
    for (size_t idx = 0; idx < 5; ++idx) {
        EXPECT_EQ(specs[idx].input_len, expected_inputs[idx]);
        EXPECT_EQ(specs[idx].output_len, expected_outputs[idx]);
    }
    EXPECT_FALSE(read_lengths_file(temp_file("bad_lengths.txt", "1 2\n3 x\n")).is_ok());
    EXPECT_FALSE(read_lengths_file(temp_file("short_lengths.txt", "5\n")).is_ok());
    EXPECT_FALSE(read_lengths_file("/nonexistent/lengths").is_ok());
}

TEST(Workload, JsonlDatasetGivesPromptsAndMaxTokensWithLineNumbersInErrors) {
    const std::string path = temp_file("prompts.jsonl", "{\"prompt\": \"one two three\", \"max_tokens\": 5}\n\n"
                                                        "{\"prompt\": \"four\"}\n");
    WorkloadOptions options;
    options.dataset_name = "jsonl";
    options.dataset_path = path;
    options.num_prompts = 3;
    options.output = LengthSpec::fixed(11);
    const auto specs = build_workload(options).value();
    ASSERT_EQ(specs.size(), 3u);
    EXPECT_EQ(specs[0].prompt, "one two three");
    EXPECT_EQ(specs[0].output_len, 5);
    EXPECT_EQ(specs[0].input_len, 3);
    EXPECT_EQ(specs[1].output_len, 11);
    EXPECT_EQ(specs[2].prompt, "one two three");
    options.dataset_path = temp_file("bad.jsonl", "{\"prompt\": \"ok\"}\n{\"text\": \"no prompt\"}\n");
    Result<std::vector<RequestSpec>> bad = build_workload(options);
    ASSERT_FALSE(bad.is_ok());
    EXPECT_NE(bad.status().message().find("bad.jsonl:2"), std::string::npos) << bad.status().message();
    options.dataset_name = "sharegpt";
    EXPECT_FALSE(build_workload(options).is_ok());
}

}  // namespace
}  // namespace tern::bench

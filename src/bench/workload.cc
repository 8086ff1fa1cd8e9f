#include "bench/workload.h"

#include <fmt/format.h>

#include <array>
#include <charconv>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace tern::bench {
namespace {

// Common words that stay single tokens after a space in SentencePiece (llama) and byte-level BPE (gpt, qwen, llama3)
// vocabularies.
constexpr std::array<std::string_view, 128> kWords = {
    "the",    "of",     "and",    "to",    "in",     "is",     "was",    "that",   "for",    "on",     "with",
    "as",     "at",     "by",     "from",  "this",   "be",     "have",   "are",    "not",    "but",    "or",
    "had",    "his",    "they",   "you",   "were",   "her",    "she",    "all",    "one",    "there",  "which",
    "can",    "their",  "an",     "will",  "said",   "more",   "when",   "who",    "up",     "out",    "would",
    "about",  "so",     "what",   "if",    "no",     "time",   "its",    "only",   "new",    "some",   "could",
    "them",   "than",   "other",  "into",  "first",  "then",   "two",    "also",   "like",   "him",    "after",
    "over",   "well",   "these",  "any",   "made",   "many",   "may",    "people", "way",    "just",   "very",
    "year",   "work",   "good",   "world", "life",   "day",    "back",   "long",   "little", "house",  "water",
    "part",   "place",  "old",    "great", "small",  "city",   "hand",   "line",   "right",  "down",   "home",
    "light",  "left",   "name",   "book",  "music",  "family", "road",   "school", "story",  "game",   "night",
    "river",  "table",  "window", "paper", "money",  "power",  "number", "point",  "state",  "sound",  "field",
    "heart",  "child",  "friend", "market", "group", "war",    "body"};

std::vector<int32_t> random_token_ids(int64_t count, int64_t vocab_size, std::mt19937_64& rng) {
    std::uniform_int_distribution<int32_t> pick(static_cast<int32_t>(first_random_token_id(vocab_size)),
                                                static_cast<int32_t>(vocab_size - 1));
    std::vector<int32_t> ids(static_cast<size_t>(count));
    for (int32_t& id : ids) id = pick(rng);
    return ids;
}

int64_t count_words(const std::string& text) {
    std::istringstream stream(text);
    std::string word;
    int64_t count = 0;
    while (stream >> word) ++count;
    return count;
}

Result<std::vector<RequestSpec>> read_jsonl(const WorkloadOptions& options) {
    std::ifstream file(options.dataset_path);
    if (!file) return not_found(fmt::format("cannot open dataset '{}'", options.dataset_path));
    std::vector<RequestSpec> rows;
    std::string line;
    for (int64_t line_number = 1; std::getline(file, line); ++line_number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        const nlohmann::json row = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        const std::string where = fmt::format("{}:{}", options.dataset_path, line_number);
        if (!row.is_object() || !row.contains("prompt") || !row["prompt"].is_string()) {
            return invalid_argument(fmt::format("{}: expected a JSON object with a string \"prompt\"", where));
        }
        RequestSpec spec;
        spec.prompt = row["prompt"].get<std::string>();
        spec.input_len = count_words(spec.prompt);
        spec.output_len = options.output.length;
        for (const char* field : {"max_tokens", "output_len"}) {
            if (!row.contains(field)) continue;
            if (!row[field].is_number_integer() || row[field].get<int64_t>() < 1) {
                return invalid_argument(fmt::format("{}: \"{}\" must be an integer >= 1", where, field));
            }
            spec.output_len = row[field].get<int64_t>();
        }
        rows.push_back(std::move(spec));
    }
    if (rows.empty()) return invalid_argument(fmt::format("dataset '{}' has no prompts", options.dataset_path));
    return rows;
}

Result<int64_t> parse_length(std::string_view text, const std::string& where) {
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || value < 0) {
        return invalid_argument(fmt::format("{}: '{}' is not a length (an integer >= 0)", where, text));
    }
    return value;
}

}  // namespace

std::string random_words(int64_t num_words, std::mt19937_64& rng) {
    std::uniform_int_distribution<size_t> pick(0, kWords.size() - 1);
    std::string text;
    text.reserve(static_cast<size_t>(num_words) * 6);
    for (int64_t word_idx = 0; word_idx < num_words; ++word_idx) {
        if (word_idx > 0) text += ' ';
        text += kWords[pick(rng)];
    }
    return text;
}

Result<std::vector<std::pair<int64_t, int64_t>>> read_lengths_file(const std::string& path) {
    std::ifstream file(path);
    if (!file) return not_found(fmt::format("cannot open lengths file '{}'", path));
    std::vector<std::pair<int64_t, int64_t>> lengths;
    std::string line;
    for (int64_t line_number = 1; std::getline(file, line); ++line_number) {
        for (char& ch : line) {
            if (ch == ',' || ch == '\t' || ch == '\r') ch = ' ';
        }
        std::istringstream fields(line);
        std::string input;
        std::string output;
        if (!(fields >> input) || input.front() == '#') continue;
        const std::string where = fmt::format("{}:{}", path, line_number);
        if (lengths.empty() && !std::isdigit(static_cast<unsigned char>(input.front()))) continue;  // a header
        if (!(fields >> output)) return invalid_argument(fmt::format("{}: expected 'input_len output_len'", where));
        TERN_ASSIGN_OR_RETURN(int64_t input_len, parse_length(input, where));
        TERN_ASSIGN_OR_RETURN(int64_t output_len, parse_length(output, where));
        lengths.emplace_back(input_len, output_len);
    }
    if (lengths.empty()) return invalid_argument(fmt::format("lengths file '{}' has no rows", path));
    return lengths;
}

Result<Workload> Workload::create(const WorkloadOptions& options) {
    if (options.num_prompts < 1) return invalid_argument("--num-prompts must be >= 1");
    Workload workload;
    workload.options_ = options;
    if (options.dataset_name == "jsonl" || options.dataset_name == "custom") {
        if (options.dataset_path.empty()) return invalid_argument("--dataset-name jsonl needs --dataset-path FILE");
        TERN_ASSIGN_OR_RETURN(workload.rows_, read_jsonl(options));
        return workload;
    }
    if (options.dataset_name != "random") {
        return invalid_argument(fmt::format("unknown --dataset-name '{}': use random or jsonl", options.dataset_name));
    }
    TERN_RETURN_IF_ERROR(validate(options.input, "--input-len"));
    TERN_RETURN_IF_ERROR(validate(options.output, "--output-len"));
    if (options.prefix_len < 0) return invalid_argument("--prefix-len must be >= 0");
    const bool token_ids = options.prompt_kind == PromptKind::kTokenIds;
    if (token_ids && options.vocab_size <= first_random_token_id(options.vocab_size) + 1) {
        return invalid_argument(fmt::format("--vocab-size must be > {} for token-id prompts",
                                            first_random_token_id(options.vocab_size) + 1));
    }
    if (!options.lengths_file.empty()) {
        TERN_ASSIGN_OR_RETURN(workload.lengths_, read_lengths_file(options.lengths_file));
    }
    std::mt19937_64 prefix_rng(options.seed ^ 0x9e3779b97f4a7c15ULL);
    if (token_ids) {
        workload.prefix_ids_ = random_token_ids(options.prefix_len, options.vocab_size, prefix_rng);
    } else {
        workload.prefix_text_ = random_words(options.prefix_len, prefix_rng);
    }
    return workload;
}

RequestSpec Workload::at(int64_t index) const {
    if (!rows_.empty()) return rows_[static_cast<size_t>(index) % rows_.size()];
    // splitmix64 of (seed, index): independent, reproducible streams per request.
    uint64_t state = options_.seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(index + 1);
    state = (state ^ (state >> 30)) * 0xbf58476d1ce4e5b9ULL;
    state = (state ^ (state >> 27)) * 0x94d049bb133111ebULL;
    std::mt19937_64 rng(state ^ (state >> 31));
    RequestSpec spec;
    int64_t input_len = 0;
    if (lengths_.empty()) {
        input_len = sample_length(options_.input, rng);
        spec.output_len = std::max<int64_t>(1, sample_length(options_.output, rng));
    } else {
        const auto& [replayed_input, replayed_output] = lengths_[static_cast<size_t>(index) % lengths_.size()];
        input_len = replayed_input;
        spec.output_len = std::max<int64_t>(1, replayed_output);
    }
    spec.input_len = options_.prefix_len + input_len;
    if (options_.prompt_kind == PromptKind::kTokenIds) {
        spec.prompt_token_ids = prefix_ids_;
        const std::vector<int32_t> body = random_token_ids(input_len, options_.vocab_size, rng);
        spec.prompt_token_ids.insert(spec.prompt_token_ids.end(), body.begin(), body.end());
        spec.input_len_exact = true;
    } else {
        spec.prompt = prefix_text_;
        if (!spec.prompt.empty() && input_len > 0) spec.prompt += ' ';
        spec.prompt += random_words(input_len, rng);
    }
    return spec;
}

Result<std::vector<RequestSpec>> build_workload(const WorkloadOptions& options) {
    TERN_ASSIGN_OR_RETURN(Workload workload, Workload::create(options));
    std::vector<RequestSpec> specs;
    specs.reserve(static_cast<size_t>(options.num_prompts));
    for (int64_t index = 0; index < options.num_prompts; ++index) specs.push_back(workload.at(index));
    return specs;
}

}  // namespace tern::bench

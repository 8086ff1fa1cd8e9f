// The requests a benchmark sends: synthetic prompts of chosen token lengths (vLLM's "random" dataset, with a shared
// prefix and length distributions), lengths replayed from a file of real requests, or prompts from a JSONL dataset.
// The bench has no tokenizer (it never links the engine), so text prompts are built from common English words that
// are one token each in the llama, qwen and GPT tokenizers; the exact count comes back in the server's usage.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "base/status.h"
#include "bench/length_dist.h"

namespace tern::bench {

enum class PromptKind {
    kText,      // words, about one token each
    kTokenIds,  // random token ids in [first_random_token_id, vocab_size), exact lengths (/v1/completions only)
};

inline constexpr int64_t kFirstRandomTokenId = 1000;  // skips byte and special tokens at the start of vocabularies

// Where random prompt ids start: past the byte and special tokens, or, in a vocabulary too small for that
// (stories260K's 512 tokens are mostly bytes), past the three SentencePiece specials only.
inline int64_t first_random_token_id(int64_t vocab_size) {
    return vocab_size > kFirstRandomTokenId + 1 ? kFirstRandomTokenId : 3;
}

struct WorkloadOptions {
    std::string dataset_name = "random";  // "random" or "jsonl" ("custom" is accepted as vLLM's name for it)
    std::string dataset_path;             // jsonl: lines of {"prompt": "...", "max_tokens": N}
    int64_t num_prompts = 1000;
    LengthSpec input = LengthSpec::fixed(1024);
    LengthSpec output = LengthSpec::fixed(128);
    int64_t prefix_len = 0;       // tokens of one shared prefix put before every prompt (on top of input lengths)
    std::string lengths_file;     // lines "input_len output_len" replayed in order, overriding input and output
    PromptKind prompt_kind = PromptKind::kText;
    int64_t vocab_size = 32000;   // kTokenIds: the vocabulary size of the served model
    uint64_t seed = 0;
};

struct RequestSpec {
    std::string prompt;                     // empty when prompt_token_ids is used
    std::vector<int32_t> prompt_token_ids;
    int64_t input_len = 0;                  // planned prompt tokens (an estimate for jsonl prompts)
    bool input_len_exact = false;           // true for token-id prompts
    int64_t output_len = 0;                 // max_tokens to ask for
};

// The requests of a run, made on demand: request i depends only on the options and i, so a long --duration run
// needs no memory for prompts it has not sent yet, and request threads can make their own prompts concurrently.
class Workload {
public:
    // Reads the dataset or lengths file and checks the options. Errors name the file and line at fault.
    static Result<Workload> create(const WorkloadOptions& options);

    // Request `index` (any index >= 0; datasets and length files are cycled). Thread-safe.
    RequestSpec at(int64_t index) const;
    int64_t num_prompts() const { return options_.num_prompts; }

private:
    WorkloadOptions options_;
    std::vector<RequestSpec> rows_;                        // jsonl rows
    std::vector<std::pair<int64_t, int64_t>> lengths_;     // replayed (input, output) lengths
    std::string prefix_text_;
    std::vector<int32_t> prefix_ids_;
};

// Workload::create, then requests 0 .. num_prompts - 1.
Result<std::vector<RequestSpec>> build_workload(const WorkloadOptions& options);

// Reads "input output" pairs, one a line (spaces, tabs or a comma between; '#' comments and a header line are
// skipped).
Result<std::vector<std::pair<int64_t, int64_t>>> read_lengths_file(const std::string& path);

// `num_words` words, about one token each, separated by spaces.
std::string random_words(int64_t num_words, std::mt19937_64& rng);

}  // namespace tern::bench

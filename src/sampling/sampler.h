// Picks the next token from one row of logits: penalties, greedy or top-k / temperature / top-p / min-p, then a
// seeded draw. It owns the token history the penalties need; it does not run the model or touch the tokenizer.
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sampling/sampling_params.h"

namespace tern {

// One Sampler per sequence. Not thread-safe: call it from the thread that drives that sequence.
//
// sample() runs, in order:
//   1. logit_bias (the finite biases, added), then the penalties (repetition, then presence/frequency; see
//      SamplingParams for which tokens count), then the bans: tokens biased "never" and, while fewer than
//      params.min_tokens tokens were accepted, the stop tokens. A banned token gets the lowest finite logit, so it
//      loses to every other token but a row where everything is banned still yields a token;
//   2. temperature == 0: return the argmax, ties to the lowest token id;
//   3. top-k (ties at the cut go to the lowest ids);
//   4. temperature scaling and softmax over the survivors;
//   5. top-p (the smallest set of best survivors holding top_p of the mass), then min-p relative to the best;
//   6. a draw from the renormalised survivors.
// The draw uses std::mt19937_64 seeded with params.seed, one 64-bit output per non-greedy sample(), turned into a
// double in [0, 1) from its top 53 bits (not std::uniform_real_distribution, whose output differs between
// standard libraries), so a seed reproduces the same tokens everywhere.
//
// Logits may be -inf (masked tokens); NaN is treated as -inf and +inf as the largest float. A row with no
// finite logit is a caller bug and fails a TERN_CHECK.
//
// Cost per sample() for a vocabulary of V: O(V) to copy, penalise and exponentiate; top-k is one O(V) pass (O(V log k)
// at worst); top-p sorts only the tokens close to its cut. Memory: a candidate buffer of 12 bytes per vocabulary entry
// shared by the samplers of one thread; per sampler, only its penalty history (O(distinct tokens seen), not O(V)),
// its logit_bias list and its stop tokens.
class Sampler {
public:
    // `params` must pass validate() and `vocab_size` must be > 0; logit_bias ids and `stop_tokens` must be in
    // [0, vocab_size) (all checked; validate user input first). `stop_tokens` are the tokens that would end the
    // sequence (EOS, stop_token_ids), banned while fewer than params.min_tokens tokens were accepted.
    Sampler(const SamplingParams& params, int32_t vocab_size, std::vector<int32_t> stop_tokens = {});

    // Adds prompt tokens to the history seen by repetition_penalty (not by presence/frequency). Call it once
    // before the first sample(); calling it again appends. Token ids must be in [0, vocab_size).
    void accept_prompt(const std::vector<int32_t>& tokens);

    // Adds one generated token to the history of every penalty. sample() does not do this itself: call it with
    // the token that was actually emitted (which may differ from the sampled one, e.g. with speculative decoding).
    void accept(int32_t token);

    // Returns a token id in [0, vocab_size) for `logits`, a row of vocab_size floats that is only read.
    // `allowed`, when given, is a bitmask of vocab_size bits (token id t is bit t % 64 of word t / 64), e.g. a
    // grammar's: the other tokens count as -inf before anything else, so no bias or penalty revives them. At least
    // one token must be allowed with a finite logit (checked).
    // Reuses the thread's candidate buffer: no heap allocation per call (after a thread's first).
    int32_t sample(const float* logits, const uint64_t* allowed = nullptr);

    // Speculative decoding's check of a draft token proposed with certainty (an n-gram match): under greedy decoding
    // the argmax, accepted when it is the draft; otherwise the draft is accepted with its probability p(draft) under
    // the distribution sample() draws from, and on rejection a token is drawn from that distribution without the
    // draft (renormalised). The token returned is distributed exactly as sample()'s: rejection sampling (Leviathan
    // et al., 2023) with a one-hot draft distribution. One or two draws from the seeded generator.
    struct DraftCheck {
        int32_t token;
        bool accepted;
    };
    DraftCheck check_draft(const float* logits, int32_t draft);

    // The `n` most likely tokens of log_softmax(logits) with their log-probabilities, most likely first (ties to
    // the lowest id); n is clamped to [0, vocab_size]. Uses the raw logits: no penalties, no temperature, which is
    // what the OpenAI `logprobs` field reports. Allocates only the returned vector.
    std::vector<std::pair<int32_t, float>> top_logprobs(const float* logits, int n);

    // Applies the penalties in place to a row of vocab_size logits, exactly as sample() does on its own copy.
    void apply_penalties(float* logits) const;

    const SamplingParams& params() const { return params_; }
    int32_t vocab_size() const { return vocab_size_; }

private:
    // A surviving token. Ranking always uses the logit, so near-equal logits whose weights round to the same
    // float still order as greedy does.
    struct Candidate {
        int32_t id;
        float logit;   // after penalties
        float weight;  // exp((logit - max_logit) / temperature): unnormalised probability, 1 for the best token
    };

    static Candidate* thread_candidates(int32_t vocab_size);
    void add_biases();
    void apply_bans();
    void push_window(int32_t token);
    float penalized(int32_t token, float logit) const;
    template <typename RefFn>
    void for_each_penalized(RefFn&& ref) const;

    // Each stage works on candidates_[0, num_candidates_); the doubles are sums of the surviving weights.
    // prepare() runs every stage before the draw: the survivors' total weight, or nothing under greedy decoding.
    std::optional<double> prepare(const float* logits, const uint64_t* allowed);
    double next_unit();
    void fill_candidates(const float* logits);
    void keep_allowed(const uint64_t* allowed);
    int32_t argmax_candidates() const;
    void keep_top_k(size_t k);
    double compute_weights();
    size_t top_p_bucket(float logit) const;
    double keep_top_p(double total);
    double keep_min_p();
    int32_t draw(double total);

    SamplingParams params_;
    int32_t vocab_size_;
    std::mt19937_64 rng_;

    // Repetition window over prompt+output: a ring of the last penalty_last_n tokens (empty when the window is
    // the whole history), per-token counts, and the distinct tokens with a non-zero count.
    bool track_window_ = false;
    std::vector<int32_t> ring_;
    size_t ring_head_ = 0;
    std::unordered_map<int32_t, int32_t> window_counts_;  // tokens with a count of 0 are absent
    std::vector<int32_t> window_tokens_;

    // Presence/frequency: per-token counts over the output and the distinct tokens with a non-zero count.
    bool track_output_ = false;
    std::unordered_map<int32_t, int32_t> output_counts_;
    std::vector<int32_t> output_tokens_;

    // logit_bias split by kind: finite biases are added before the penalties, "never" tokens banned after them.
    std::vector<std::pair<int32_t, float>> biases_;
    std::vector<int32_t> never_tokens_;
    std::vector<int32_t> stop_tokens_;  // banned until min_tokens tokens are accepted
    int32_t num_accepted_ = 0;          // generated tokens accepted so far, for min_tokens

    // Candidates [0, num_candidates_) survive, in no particular order; the buffer is the thread's (set by
    // fill_candidates, valid during one sample() or top_logprobs() call).
    Candidate* candidates_ = nullptr;
    size_t num_candidates_ = 0;
    float max_logit_ = 0.0f;            // best surviving logit, set by compute_weights()
    std::vector<double> bucket_mass_;   // top-p histogram; sized only when top_p is on
};

}  // namespace tern

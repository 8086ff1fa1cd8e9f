#include "sampling/sampler.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <limits>

#include "base/check.h"

namespace tern {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();
// What a banned token's logit becomes: below any real logit, yet finite, so that a row in which every token is
// banned (a request may ban them all) still has an argmax instead of failing the "nothing can be sampled" check.
constexpr float kBannedLogit = -FLT_MAX;

// Top-p buckets tokens by how far their scaled logit lies below the best one: kBucketsPerNat buckets per unit of
// (max_logit - logit) / temperature, and everything kNumTopPBuckets / kBucketsPerNat = 32 nats or more below the
// best (probability ratio < 1.3e-14) shares the last bucket.
constexpr float kBucketsPerNat = 16.0f;
constexpr size_t kNumTopPBuckets = 512;

// Best first: higher logit, then lower id. A strict total order (ids are unique), so every cut is deterministic.
template <typename C>
bool ranks_before(const C& a, const C& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
}

// NaN can only mean "never pick this"; +inf would turn the softmax into inf - inf.
float sanitize(float logit) {
    if (std::isnan(logit)) return kNegInf;
    return std::min(logit, FLT_MAX);
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t vocab_size, std::vector<int32_t> stop_tokens)
    : params_(params), vocab_size_(vocab_size), rng_(params.seed), stop_tokens_(std::move(stop_tokens)) {
    Status status = params.validate();
    TERN_CHECK(status.is_ok()) << "Sampler built from invalid SamplingParams: " << status.message();
    TERN_CHECK(vocab_size > 0) << "vocab_size must be > 0, got " << vocab_size;
    for (const auto& [token, bias] : params.logit_bias) {
        TERN_CHECK(token < vocab_size) << "logit_bias token " << token << " outside the vocabulary";
        if (std::isinf(bias)) {
            never_tokens_.push_back(token);
        } else {
            biases_.emplace_back(token, bias);
        }
    }
    for (int32_t token : stop_tokens_) {
        TERN_CHECK(token >= 0 && token < vocab_size) << "stop token " << token << " outside the vocabulary";
    }
    track_window_ = params.repetition_penalty != 1.0f && params.penalty_last_n != 0;
    track_output_ = params.presence_penalty != 0.0f || params.frequency_penalty != 0.0f;
    if (params.top_p < 1.0f) bucket_mass_.resize(kNumTopPBuckets);
}

void Sampler::accept_prompt(const std::vector<int32_t>& tokens) {
    for (int32_t token : tokens) {
        TERN_CHECK(token >= 0 && token < vocab_size_) << "prompt token " << token << " outside the vocabulary";
        if (track_window_) push_window(token);
    }
}

void Sampler::accept(int32_t token) {
    TERN_CHECK(token >= 0 && token < vocab_size_) << "token " << token << " outside the vocabulary";
    if (track_window_) push_window(token);
    if (track_output_ && output_counts_[token]++ == 0) output_tokens_.push_back(token);
    ++num_accepted_;
}

void Sampler::push_window(int32_t token) {
    if (params_.penalty_last_n > 0) {
        // The ring grows only as tokens arrive, so a huge penalty_last_n costs no more than the history itself.
        const auto capacity = static_cast<size_t>(params_.penalty_last_n);
        if (ring_.size() < capacity) {
            ring_.push_back(token);
        } else {
            const int32_t evicted = ring_[ring_head_];
            ring_[ring_head_] = token;
            ring_head_ = (ring_head_ + 1) % capacity;
            auto evicted_count = window_counts_.find(evicted);
            if (--evicted_count->second == 0) {
                window_counts_.erase(evicted_count);
                // Linear in the number of distinct tokens in the window, which is at most penalty_last_n.
                auto it = std::find(window_tokens_.begin(), window_tokens_.end(), evicted);
                *it = window_tokens_.back();
                window_tokens_.pop_back();
            }
        }
    }
    if (window_counts_[token]++ == 0) window_tokens_.push_back(token);
}

float Sampler::penalized(int32_t token, float logit) const {
    if (track_window_ && window_counts_.contains(token)) {
        const float penalty = params_.repetition_penalty;
        logit = logit > 0.0f ? logit / penalty : logit * penalty;
    }
    if (track_output_) {
        auto count = output_counts_.find(token);
        if (count != output_counts_.end()) {
            logit -= params_.presence_penalty + params_.frequency_penalty * static_cast<float>(count->second);
        }
    }
    return logit;
}

// Visits every token with at least one penalty exactly once; `ref(token)` returns a float& to its logit.
template <typename RefFn>
void Sampler::for_each_penalized(RefFn&& ref) const {
    for (int32_t token : window_tokens_) {
        float& logit = ref(token);
        logit = penalized(token, logit);
    }
    for (int32_t token : output_tokens_) {
        if (track_window_ && window_counts_.contains(token)) continue;  // done in the loop above
        float& logit = ref(token);
        logit = penalized(token, logit);
    }
}

void Sampler::apply_penalties(float* logits) const {
    for_each_penalized([logits](int32_t token) -> float& { return logits[token]; });
}

// One candidate buffer per thread, not per sampler: a server holds a sampler for every request it has admitted,
// waiting ones included, and 12 bytes per vocabulary entry each (1.8 MB for a 152k vocabulary) added up to gigabytes
// with a full queue. Samplers on one thread never sample at the same time, so they can share it.
Sampler::Candidate* Sampler::thread_candidates(int32_t vocab_size) {
    thread_local std::vector<Candidate> buffer;
    if (buffer.size() < static_cast<size_t>(vocab_size)) buffer.resize(static_cast<size_t>(vocab_size));
    return buffer.data();
}

void Sampler::fill_candidates(const float* logits) {
    candidates_ = thread_candidates(vocab_size_);
    for (int32_t id = 0; id < vocab_size_; ++id) candidates_[id] = {id, sanitize(logits[id]), 0.0f};
    num_candidates_ = static_cast<size_t>(vocab_size_);
}

// Keeps only the allowed tokens, in id order. The weights and the draw then run over those alone: a grammar
// position allows a few tokens (a key, an enum) or most of them (a string), and the exp of all 152k candidates
// was the costliest part of a constrained step (compute_weights, 9% of a 16-request schema run under perf).
void Sampler::keep_allowed(const uint64_t* allowed) {
    size_t kept = 0;
    const size_t words = (static_cast<size_t>(vocab_size_) + 63) / 64;
    for (size_t word = 0; word < words; ++word) {
        for (uint64_t bits = allowed[word]; bits != 0; bits &= bits - 1) {
            const size_t id = word * 64 + static_cast<size_t>(__builtin_ctzll(bits));
            if (id < static_cast<size_t>(vocab_size_)) candidates_[kept++] = candidates_[id];  // kept <= id
        }
    }
    num_candidates_ = kept;
}

std::optional<double> Sampler::prepare(const float* logits, const uint64_t* allowed) {
    fill_candidates(logits);
    // Right after fill_candidates, candidates_[id].id == id, so the biases, penalties and bans index by token id.
    add_biases();
    for_each_penalized([this](int32_t token) -> float& { return candidates_[token].logit; });
    apply_bans();
    if (allowed) keep_allowed(allowed);  // after the biases and penalties: none of them revives a refused token
    TERN_CHECK(num_candidates_ > 0) << "no token is allowed: nothing can be sampled";
    if (params_.temperature == 0.0f) return std::nullopt;

    if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < num_candidates_) keep_top_k(params_.top_k);
    double total = compute_weights();
    if (params_.top_p < 1.0f) total = keep_top_p(total);
    if (params_.min_p > 0.0f) total = keep_min_p();
    return total;
}

int32_t Sampler::sample(const float* logits, const uint64_t* allowed) {
    const std::optional<double> total = prepare(logits, allowed);
    return total ? draw(*total) : argmax_candidates();
}

Sampler::DraftCheck Sampler::check_draft(const float* logits, int32_t draft) {
    const std::optional<double> total = prepare(logits, nullptr);
    if (!total) {
        const int32_t best = argmax_candidates();
        return {best, best == draft};
    }
    Candidate* drafted = nullptr;
    for (size_t idx = 0; idx < num_candidates_; ++idx) {
        if (candidates_[idx].id == draft && candidates_[idx].weight > 0.0f) drafted = &candidates_[idx];
    }
    const double draft_weight = drafted != nullptr ? drafted->weight : 0.0;
    if (next_unit() * *total < draft_weight) return {draft, true};
    if (drafted != nullptr) drafted->weight = 0.0f;  // draw() skips it: p without the draft
    return {draw(*total - draft_weight), false};
}

void Sampler::add_biases() {
    for (const auto& [token, bias] : biases_) {
        float& logit = candidates_[token].logit;
        if (logit != kNegInf) logit = sanitize(logit + bias);  // a masked token stays masked
    }
}

// After the penalties: a repetition penalty would multiply kBannedLogit past the lowest float, to -inf.
void Sampler::apply_bans() {
    const auto ban = [this](int32_t token) {
        float& logit = candidates_[token].logit;
        logit = std::min(logit, kBannedLogit);  // a token the model masked (-inf) stays masked
    };
    for (int32_t token : never_tokens_) ban(token);
    if (num_accepted_ >= params_.min_tokens) return;
    for (int32_t token : stop_tokens_) ban(token);
}

int32_t Sampler::argmax_candidates() const {
    // Candidates are in id order here, so a strict comparison keeps the lowest id among equal logits.
    size_t best = 0;
    float best_logit = candidates_[0].logit;
    for (size_t idx = 1; idx < num_candidates_; ++idx) {
        if (candidates_[idx].logit > best_logit) {
            best = idx;
            best_logit = candidates_[idx].logit;
        }
    }
    TERN_CHECK(best_logit > kNegInf) << "every logit is -inf or NaN: nothing can be sampled";
    return candidates_[best].id;
}

void Sampler::keep_top_k(size_t k) {
    // One pass keeping a heap of the k best so far in candidates_[0, k) (slots the scan has already read), worst
    // on top. Few tokens beat the current worst in practice, so this is O(V) plus O(k log k); O(V log k) at worst.
    Candidate* const begin = candidates_;
    Candidate* const heap_end = begin + static_cast<std::ptrdiff_t>(k);
    std::make_heap(begin, heap_end, ranks_before<Candidate>);
    for (size_t idx = k; idx < num_candidates_; ++idx) {
        const Candidate candidate = candidates_[idx];
        if (candidate.logit < candidates_[0].logit || !ranks_before(candidate, candidates_[0])) continue;
        std::pop_heap(begin, heap_end, ranks_before<Candidate>);
        *(heap_end - 1) = candidate;
        std::push_heap(begin, heap_end, ranks_before<Candidate>);
    }
    num_candidates_ = k;
}

double Sampler::compute_weights() {
    float max_logit = kNegInf;
    for (size_t idx = 0; idx < num_candidates_; ++idx) max_logit = std::max(max_logit, candidates_[idx].logit);
    TERN_CHECK(max_logit > kNegInf) << "every logit is -inf or NaN: nothing can be sampled";
    max_logit_ = max_logit;
    // Subtract the max before dividing by the temperature: (logit - max) <= 0, so even a tiny temperature gives
    // exp(-inf) = 0 or exp(0) = 1 instead of inf / inf.
    const float temperature = params_.temperature;
    double total = 0.0;
    for (size_t idx = 0; idx < num_candidates_; ++idx) {
        Candidate& candidate = candidates_[idx];
        candidate.weight = std::exp((candidate.logit - max_logit) / temperature);
        total += candidate.weight;
    }
    return total;
}

size_t Sampler::top_p_bucket(float logit) const {
    // Weakly decreasing in the logit (each float step rounds monotonically), so a better bucket never holds a
    // token that ranks below one in a worse bucket, and equal logits always share a bucket.
    const float scaled = (max_logit_ - logit) / params_.temperature * kBucketsPerNat;
    return scaled < static_cast<float>(kNumTopPBuckets - 1) ? static_cast<size_t>(scaled) : kNumTopPBuckets - 1;
}

double Sampler::keep_top_p(double total) {
    // Sorting all survivors would cost O(V log V) per token when top-k is off. Instead find the bucket in which
    // the cumulative probability crosses top_p, keep every better bucket unsorted and sort only the crossing one.
    // All tokens sharing one bucket (e.g. a flat distribution) degrades to a single full sort.
    std::fill(bucket_mass_.begin(), bucket_mass_.end(), 0.0);
    for (size_t idx = 0; idx < num_candidates_; ++idx) {
        bucket_mass_[top_p_bucket(candidates_[idx].logit)] += candidates_[idx].weight;
    }
    const double target = static_cast<double>(params_.top_p) * total;
    double mass_before = 0.0;
    size_t crossing = 0;
    // The crossing bucket is non-empty: mass_before < target, so an empty bucket cannot reach it. Rounding may
    // leave the sum short of target; then the last bucket counts as crossing and everything is kept.
    while (crossing + 1 < kNumTopPBuckets && mass_before + bucket_mass_[crossing] < target) {
        mass_before += bucket_mass_[crossing++];
    }
    Candidate* const begin = candidates_;
    Candidate* const end = begin + num_candidates_;
    const auto better_end =
        std::partition(begin, end, [&](const Candidate& c) { return top_p_bucket(c.logit) < crossing; });
    const auto crossing_end =
        std::partition(better_end, end, [&](const Candidate& c) { return top_p_bucket(c.logit) == crossing; });
    std::sort(better_end, crossing_end, ranks_before<Candidate>);
    double cumulative = mass_before;
    auto kept_end = better_end;
    while (kept_end != crossing_end && cumulative < target) cumulative += (kept_end++)->weight;
    num_candidates_ = static_cast<size_t>(kept_end - begin);

    // draw() walks the survivors in this order; summing them in the same order makes its total exact.
    double kept_total = 0.0;
    for (size_t idx = 0; idx < num_candidates_; ++idx) kept_total += candidates_[idx].weight;
    return kept_total;
}

double Sampler::keep_min_p() {
    // The best survivor has weight exp(0) = 1 exactly, so min_p * p_max is min_p in weight units.
    const float threshold = params_.min_p;
    size_t kept = 0;
    double total = 0.0;
    for (size_t idx = 0; idx < num_candidates_; ++idx) {
        if (candidates_[idx].weight < threshold) continue;
        total += candidates_[idx].weight;
        candidates_[kept++] = candidates_[idx];
    }
    num_candidates_ = kept;
    return total;
}

// Top 53 bits of one mt19937_64 output give a double in [0, 1) that is the same on every standard library.
double Sampler::next_unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

int32_t Sampler::draw(double total) {
    const double target = next_unit() * total;
    double cumulative = 0.0;
    int32_t last_possible = candidates_[0].id;
    for (size_t idx = 0; idx < num_candidates_; ++idx) {
        const Candidate& candidate = candidates_[idx];
        if (candidate.weight <= 0.0f) continue;
        cumulative += candidate.weight;
        last_possible = candidate.id;
        if (target < cumulative) return candidate.id;
    }
    // Only reached when rounding puts `target` at the very end of the distribution.
    return last_possible;
}

std::vector<std::pair<int32_t, float>> Sampler::top_logprobs(const float* logits, int n) {
    const size_t count = static_cast<size_t>(std::clamp(n, 0, vocab_size_));
    fill_candidates(logits);
    float max_logit = kNegInf;
    for (size_t idx = 0; idx < num_candidates_; ++idx) max_logit = std::max(max_logit, candidates_[idx].logit);
    TERN_CHECK(max_logit > kNegInf) << "every logit is -inf or NaN: log-softmax is undefined";
    double sum = 0.0;
    for (size_t idx = 0; idx < num_candidates_; ++idx) sum += std::exp(candidates_[idx].logit - max_logit);
    const double log_sum = std::log(sum);

    if (count < num_candidates_ && count > 0) keep_top_k(count);
    std::sort(candidates_, candidates_ + count, ranks_before<Candidate>);
    std::vector<std::pair<int32_t, float>> result;
    result.reserve(count);
    for (size_t idx = 0; idx < count; ++idx) {
        const Candidate& candidate = candidates_[idx];
        const double logprob = static_cast<double>(candidate.logit - max_logit) - log_sum;
        result.emplace_back(candidate.id, static_cast<float>(logprob));
    }
    return result;
}

}  // namespace tern

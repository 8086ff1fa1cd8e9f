#include "grammar/token_masks.h"

#include <algorithm>
#include <numeric>

#include "grammar/follow_sets.h"
#include "grammar/token_walk.h"

namespace tern::grammar {
namespace {

// Past this share of the vocabulary a position's accepted tokens are kept as a bitmask (a few KiB) rather than
// a list: merging a mask is a pass over words, setting a list is a store per token.
constexpr size_t kDenseShare = 32;

// The callers of a position's rule, and of theirs, as long as each rule is referred to from one place only: there
// the context is known, and a token that leaves the rule can be judged at compile time. A string's character class
// (a helper rule of UTF-8 alternatives) would otherwise end after every character and leave most tokens to be
// checked at run time.
struct Context {
    std::vector<uint32_t> callers;
    uint32_t rule;
};

// Alternatives are laid out one after another, each closed by a kEnd position.
bool is_alternative_start(const Grammar& grammar, uint32_t position) {
    return position == 0 || grammar.at(position - 1).kind == Position::kEnd;
}

Context unique_context(const Grammar& grammar, const std::vector<std::vector<uint32_t>>& references, uint32_t position) {
    Context context{{}, grammar.rule_of(position)};
    std::vector<bool> seen(grammar.rules().size(), false);
    seen[context.rule] = true;
    while (true) {
        // A left-recursive reference of a rule to itself (a star's own repetition: star ::= star x) is not another
        // context: its callers are the rule's own alternatives where it began, added below. Any other reference
        // from inside (R ::= "(" R ")") is a context of its own, and stops the chain.
        std::vector<uint32_t> outside;
        for (uint32_t reference : references[context.rule]) {
            const bool left_recursion = grammar.rule_of(reference) == context.rule &&
                                        is_alternative_start(grammar, reference);
            if (!left_recursion) outside.push_back(reference);
        }
        if (outside.size() != 1) break;
        const uint32_t caller = outside[0];
        const uint32_t outer = grammar.rule_of(caller);
        if (seen[outer]) break;
        seen[outer] = true;
        context.callers.push_back(caller);
        context.rule = outer;
    }
    // A left-recursive rule (a star: star ::= star x) repeats through its own alternatives that wait for it where
    // it began; the whole parse has them there (prediction adds every alternative), so the partial one needs them
    // too, or every token spanning two repetitions would be left to the run-time check.
    for (uint32_t rule = 0; rule < grammar.rules().size(); ++rule) {
        if (!seen[rule]) continue;
        for (uint32_t alternative : grammar.rules()[rule].alternatives) {
            const Position& first = grammar.at(alternative);
            if (first.kind == Position::kRule && first.index == rule) context.callers.push_back(alternative);
        }
    }
    return context;
}

std::vector<std::vector<uint32_t>> references_by_rule(const Grammar& grammar) {
    std::vector<std::vector<uint32_t>> references(grammar.rules().size());
    for (uint32_t position = 0; position < grammar.positions().size(); ++position) {
        if (grammar.at(position).kind == Position::kRule) references[grammar.at(position).index].push_back(position);
    }
    return references;
}

std::vector<uint32_t> all_indices(const TokenVocabulary& vocabulary) {
    std::vector<uint32_t> indices(vocabulary.sorted().size());
    std::iota(indices.begin(), indices.end(), 0u);
    return indices;
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocabulary)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      tokens_(grammar_.positions().size()),
      distances_(grammar_),
      all_tokens_(all_indices(*vocabulary_)) {
    const auto started = std::chrono::steady_clock::now();
    const std::vector<uint32_t>& everything = all_tokens_;
    const std::vector<int32_t>& sorted = vocabulary_->sorted();
    Chart chart(grammar_);
    const std::vector<ByteSet> follow = follow_sets(grammar_);
    const std::vector<std::vector<uint32_t>> references = references_by_rule(grammar_);
    for (uint32_t position = 0; position < grammar_.positions().size(); ++position) {
        if (grammar_.at(position).kind != Position::kBytes) continue;
        PositionTokens& tokens = tokens_[position];
        const Context known = unique_context(grammar_, references, position);
        chart.start_inside(position, known.callers);
        const std::optional<WalkContext> context = WalkContext{known.rule, follow[known.rule]};
        walk_tokens(chart, *vocabulary_, everything, context, [&](uint32_t index, TokenVerdict v) {
            if (v == TokenVerdict::kAccepted) {
                tokens.accepted.push_back(sorted[index]);
            } else {
                tokens.uncertain.push_back(index);
            }
        });
        ++stats_.positions;
        stats_.accepted += tokens.accepted.size();
        stats_.uncertain += tokens.uncertain.size();
        if (tokens.accepted.size() * kDenseShare > vocabulary_->size()) {
            tokens.accepted_mask = TokenMask(vocabulary_->size());
            for (int32_t id : tokens.accepted) tokens.accepted_mask.set(id);
            tokens.accepted.clear();
            tokens.accepted.shrink_to_fit();
            tokens.dense = true;
        }
    }
    stats_.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
}

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled)
    : compiled_(std::move(compiled)), chart_(compiled_->grammar()), distance_(compiled_->distances()) {
    chart_.start_at_root();
}

bool GrammarMatcher::accept_token(int32_t id) {
    const std::string& bytes = compiled_->vocabulary().bytes(id);
    if (bytes.empty() || !chart_.scan_all(bytes)) return false;
    token_ends_.push_back(chart_.sets());
    return true;
}

void GrammarMatcher::fill_next_token_mask(TokenMask& mask) {
    if (mask.size() != compiled_->vocabulary().size()) mask = TokenMask(compiled_->vocabulary().size());
    mask.clear();
    std::vector<uint32_t> uncertain;
    for (uint32_t position : chart_.scannable_positions()) {
        const PositionTokens& tokens = compiled_->tokens_at(position);
        if (tokens.dense) {
            mask.merge(tokens.accepted_mask);
        } else {
            for (int32_t id : tokens.accepted) mask.set(id);
        }
        uncertain.insert(uncertain.end(), tokens.uncertain.begin(), tokens.uncertain.end());
    }
    const std::vector<int32_t>& sorted = compiled_->vocabulary().sorted();
    std::sort(uncertain.begin(), uncertain.end());
    uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
    uncertain.erase(std::remove_if(uncertain.begin(), uncertain.end(), [&](uint32_t i) { return mask.test(sorted[i]); }),
                    uncertain.end());
    walk_tokens(chart_, compiled_->vocabulary(), uncertain, std::nullopt, [&](uint32_t index, TokenVerdict verdict) {
        if (verdict == TokenVerdict::kAccepted) mask.set(sorted[index]);
    });
}

void GrammarMatcher::fill_shortest_path_mask(TokenMask& mask) {
    if (mask.size() != compiled_->vocabulary().size()) mask = TokenMask(compiled_->vocabulary().size());
    mask.clear();
    const size_t base = chart_.sets();
    const uint32_t distance = distance_.to_end(chart_, base);
    if (distance == 0 || distance == kNoCompletion) return;
    const std::vector<int32_t>& sorted = compiled_->vocabulary().sorted();
    walk_tokens(
        chart_, compiled_->vocabulary(), compiled_->all_tokens_, std::nullopt,
        [&](uint32_t index, TokenVerdict verdict) {
            if (verdict == TokenVerdict::kAccepted) mask.set(sorted[index]);
        },
        [&](size_t length) { return length <= distance && distance_.to_end(chart_, base) == distance - length; });
}

void GrammarMatcher::rollback(size_t tokens) {
    TERN_CHECK(tokens <= token_ends_.size()) << "rollback of " << tokens << " tokens, " << token_ends_.size() << " read";
    token_ends_.resize(token_ends_.size() - tokens);
    chart_.truncate(token_ends_.empty() ? 1 : token_ends_.back());
    distance_.forget();  // its kept values were for sets now gone
}

}  // namespace tern::grammar

#include "grammar/token_masks.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "grammar/follow_sets.h"
#include "grammar/token_walk.h"

namespace tern::grammar {
namespace {

// Past this share of the vocabulary a position's accepted tokens are kept as a bitmask (a few KiB) rather than
// a list: merging a mask is a pass over words, setting a list is a store per token.
constexpr size_t kDenseShare = 32;

// Cumulative masks for needs 2..kMaskedNeeds when a position has many needing tokens (a string's character: most
// of the vocabulary): setting them one by one took a few hundred us a mask.
constexpr uint32_t kMaskedNeeds = 24;

// The parser work (Chart::limit_work) one token or one mask may take, 4M item operations (about 0.1-0.2 s), and one
// byte, 128k (a set of that many items is a choice among 100k strings, or a hostile grammar 500 bytes in). The
// invoice schema's masks on Qwen2's vocabulary took at most 6,258 (grammar_bench).
constexpr uint64_t kWorkPerCall = uint64_t{1} << 22;
constexpr uint64_t kWorkPerByte = uint64_t{1} << 17;

// The callers of a position's rule, and of theirs, as long as each rule is referred to from one place only: there
// the context is known, and a token that leaves the rule can be judged at compile time. A string's character class
// (a helper rule of UTF-8 alternatives) would otherwise end after every character and leave most tokens to be
// checked at run time. A rule referred to only by counted repetitions ends the chain there: the count is the
// context, known at run time (CountedTokens).
struct Context {
    std::vector<uint32_t> callers;
    uint32_t rule;
    std::vector<uint32_t> repeats;  // the counted repetitions of `rule`, when the chain ends at them
    std::vector<uint32_t> rules;    // every rule of the chain
};

// Alternatives are laid out one after another, each closed by a kEnd position.
bool is_alternative_start(const Grammar& grammar, uint32_t position) {
    return position == 0 || grammar.at(position - 1).kind == Position::kEnd;
}

Context context_of(const Grammar& grammar, const std::vector<std::vector<uint32_t>>& references, uint32_t position) {
    Context context{{}, grammar.rule_of(position), {}, {}};
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
        const auto counted = [&](uint32_t p) { return grammar.at(p).kind == Position::kRepeat; };
        if (!outside.empty() && std::all_of(outside.begin(), outside.end(), counted)) {
            context.repeats = outside;
            break;
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
        context.rules.push_back(rule);
        for (uint32_t alternative : grammar.rules()[rule].alternatives) {
            const Position& first = grammar.at(alternative);
            if (first.kind == Position::kRule && first.index == rule) context.callers.push_back(alternative);
        }
    }
    return context;
}

// Rules a sentence can use: the others (a rule only repeated through its counted twin) need no masks, and their
// references are no context.
std::vector<bool> reachable_rules(const Grammar& grammar) {
    std::vector<bool> reached(grammar.rules().size(), false);
    std::vector<uint32_t> pending{0};
    reached[0] = true;
    while (!pending.empty()) {
        const uint32_t rule = pending.back();
        pending.pop_back();
        for (uint32_t p : grammar.rules()[rule].alternatives) {
            for (; grammar.at(p).kind != Position::kEnd; ++p) {
                if (grammar.at(p).refers_to_rule() && !reached[grammar.at(p).index]) {
                    reached[grammar.at(p).index] = true;
                    pending.push_back(grammar.at(p).index);
                }
            }
        }
    }
    return reached;
}

std::vector<std::vector<uint32_t>> references_by_rule(const Grammar& grammar, const std::vector<bool>& reachable) {
    std::vector<std::vector<uint32_t>> references(grammar.rules().size());
    for (uint32_t position = 0; position < grammar.positions().size(); ++position) {
        if (grammar.at(position).refers_to_rule() && reachable[grammar.rule_of(position)]) {
            references[grammar.at(position).index].push_back(position);
        }
    }
    return references;
}

std::vector<uint32_t> all_indices(const TokenVocabulary& vocabulary) {
    std::vector<uint32_t> indices(vocabulary.sorted().size());
    std::iota(indices.begin(), indices.end(), 0u);
    return indices;
}

// How many elements of a counted repetition the walk's last set takes up, fewest over its items: an item at the
// repetition itself has finished that many; one inside an element is in element number `element`.
uint32_t need_of_last_set(const Chart& chart) {
    uint32_t need = std::numeric_limits<uint32_t>::max();
    for (const Item& item : chart.items_of(chart.sets() - 1)) {
        if (item.count >= kUnknownCount) {
            need = std::min(need, item.count - kUnknownCount);
        } else if (item.element > 0) {
            need = std::min(need, item.element);
        }
    }
    return need;
}

void finish_counted(CountedTokens& counted, size_t vocabulary_size, const std::vector<int32_t>& sorted) {
    const auto by_need = [](const auto& a, const auto& b) {
        return std::tie(a.need, a.index) < std::tie(b.need, b.index);
    };
    std::sort(counted.staying.begin(), counted.staying.end(), by_need);
    if (counted.staying.size() * kDenseShare <= vocabulary_size) return;
    TokenMask mask(vocabulary_size);
    size_t next = 0;
    for (uint32_t need = 2; need <= kMaskedNeeds && next < counted.staying.size(); ++need) {
        for (; next < counted.staying.size() && counted.staying[next].need <= need; ++next) {
            mask.set(sorted[counted.staying[next].index]);
        }
        counted.up_to.push_back(mask);
    }
}

// Many accepted tokens: kept as a bitmask, which a mask merges word by word.
void make_dense(PositionTokens& tokens, size_t vocabulary_size) {
    tokens.accepted_mask = TokenMask(vocabulary_size);
    for (int32_t id : tokens.accepted) tokens.accepted_mask.set(id);
    tokens.accepted.clear();
    tokens.accepted.shrink_to_fit();
    tokens.dense = true;
}

PositionTokens compile_position(const Grammar& grammar, const TokenVocabulary& vocabulary,
                                const std::vector<uint32_t>& everything, const FollowSets& sets,
                                const std::vector<std::vector<uint32_t>>& references, uint32_t position, Chart& chart) {
    PositionTokens tokens;
    const Context known = context_of(grammar, references, position);
    const bool counted = !known.repeats.empty();
    const uint32_t element = counted ? 1 : 0;  // the element in progress is the first counted here
    std::vector<Item> callers;
    for (uint32_t caller : known.callers) callers.push_back({caller, 0, 0, element});
    WalkContext context{known.rule, sets.follow[known.rule]};
    if (counted) {
        callers.push_back({known.repeats[0], 0, kUnknownCount, 0});  // any one: inside, they behave alike
        context.counted = true;
        context.follow.reset();
        for (uint32_t repeat : known.repeats) context.follow |= sets.bytes_after(grammar, repeat);
        tokens.counted = std::make_unique<CountedTokens>();
        tokens.counted->rules = known.rules;
    }
    chart.start_inside({position, 0, 0, element}, callers);
    const std::vector<int32_t>& sorted = vocabulary.sorted();
    walk_tokens(chart, vocabulary, everything, context, [&](uint32_t index, TokenVerdict verdict) {
        if (verdict == TokenVerdict::kUncertain) {
            tokens.uncertain.push_back(index);
            return;
        }
        const uint32_t need = counted ? need_of_last_set(chart) : 1;
        if (need <= 1) {
            tokens.accepted.push_back(sorted[index]);
        } else {
            auto& list = verdict == TokenVerdict::kAcceptedMayLeave ? tokens.counted->leaving : tokens.counted->staying;
            list.push_back({need, index});
        }
    });
    if (tokens.accepted.size() * kDenseShare > vocabulary.size()) make_dense(tokens, vocabulary.size());
    if (counted) finish_counted(*tokens.counted, vocabulary.size(), sorted);
    return tokens;
}

// The most room (max - count) that a counted repetition around the live items at `position` has, over the parses
// the chart holds; nullopt when none is found.
std::optional<uint32_t> room_around(const Chart& chart, uint32_t position, const std::vector<uint32_t>& rules) {
    const Grammar& grammar = chart.grammar();
    std::vector<std::pair<uint32_t, uint32_t>> pending;  // (rule, set where it began)
    for (const Item& item : chart.items_of(chart.sets() - 1)) {
        if (item.position == position) pending.emplace_back(grammar.rule_of(position), item.origin);
    }
    std::set<std::pair<uint32_t, uint32_t>> seen;
    std::optional<uint32_t> room;
    while (!pending.empty()) {
        const auto [rule, set] = pending.back();
        pending.pop_back();
        if (!seen.insert({rule, set}).second) continue;
        for (uint32_t index : chart.waiting_of(set)) {
            const Item& caller = chart.item(index);
            const Position& at = grammar.at(caller.position);
            if (at.index != rule) continue;
            if (at.kind == Position::kRepeat) {
                if (caller.count < at.max) room = std::max(room.value_or(0), at.max - caller.count);
                continue;
            }
            const uint32_t outer = grammar.rule_of(caller.position);
            if (std::find(rules.begin(), rules.end(), outer) != rules.end()) pending.emplace_back(outer, caller.origin);
        }
    }
    return room;
}

}  // namespace

CompiledGrammar::CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocabulary)
    : grammar_(std::move(grammar)),
      vocabulary_(std::move(vocabulary)),
      tokens_(grammar_.positions().size()),
      distances_(grammar_),
      all_tokens_(all_indices(*vocabulary_)) {
    const auto started = std::chrono::steady_clock::now();
    Chart chart(grammar_);
    const FollowSets follow = follow_sets(grammar_);
    const std::vector<bool> reachable = reachable_rules(grammar_);
    const std::vector<std::vector<uint32_t>> references = references_by_rule(grammar_, reachable);
    for (uint32_t position = 0; position < grammar_.positions().size(); ++position) {
        if (grammar_.at(position).kind != Position::kBytes || !reachable[grammar_.rule_of(position)]) continue;
        tokens_[position] =
            compile_position(grammar_, *vocabulary_, all_tokens_, follow, references, position, chart);
        const PositionTokens& tokens = tokens_[position];
        ++stats_.positions;
        stats_.accepted += tokens.dense ? tokens.accepted_mask.count() : tokens.accepted.size();
        if (tokens.counted) stats_.accepted += tokens.counted->staying.size() + tokens.counted->leaving.size();
        stats_.uncertain += tokens.uncertain.size();
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
    chart_.limit_work(kWorkPerCall, kWorkPerByte);
    if (bytes.empty() || !chart_.scan_all(bytes)) {
        overloaded_ = overloaded_ || chart_.exhausted();
        return false;
    }
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
        if (tokens.counted) add_counted(position, *tokens.counted, mask, uncertain);
    }
    const std::vector<int32_t>& sorted = compiled_->vocabulary().sorted();
    std::sort(uncertain.begin(), uncertain.end());
    uncertain.erase(std::unique(uncertain.begin(), uncertain.end()), uncertain.end());
    uncertain.erase(std::remove_if(uncertain.begin(), uncertain.end(), [&](uint32_t i) { return mask.test(sorted[i]); }),
                    uncertain.end());
    chart_.limit_work(kWorkPerCall, kWorkPerByte);
    walk_tokens(chart_, compiled_->vocabulary(), uncertain, std::nullopt, [&](uint32_t index, TokenVerdict verdict) {
        if (verdict == TokenVerdict::kAccepted) mask.set(sorted[index]);
    });
    overloaded_ = overloaded_ || chart_.exhausted();
}

void GrammarMatcher::add_counted(uint32_t position, const CountedTokens& counted, TokenMask& mask,
                                 std::vector<uint32_t>& uncertain) const {
    const std::vector<int32_t>& sorted = compiled_->vocabulary().sorted();
    const std::optional<uint32_t> room = room_around(chart_, position, counted.rules);
    for (const CountedTokens::Needing& token : counted.leaving) {
        if (room && token.need <= *room) {
            mask.set(sorted[token.index]);
        } else {
            uncertain.push_back(token.index);
        }
    }
    if (!room) {  // not expected; the live check is always right
        for (const CountedTokens::Needing& token : counted.staying) uncertain.push_back(token.index);
        return;
    }
    size_t next = 0;
    if (*room >= 2 && !counted.up_to.empty()) {
        const uint32_t masked = std::min<uint32_t>(*room, static_cast<uint32_t>(counted.up_to.size()) + 1);
        mask.merge(counted.up_to[masked - 2]);
        next = static_cast<size_t>(
            std::partition_point(counted.staying.begin(), counted.staying.end(),
                                 [&](const CountedTokens::Needing& token) { return token.need <= masked; }) -
            counted.staying.begin());
    }
    for (; next < counted.staying.size() && counted.staying[next].need <= *room; ++next) {
        mask.set(sorted[counted.staying[next].index]);
    }
}

void GrammarMatcher::fill_shortest_path_mask(TokenMask& mask) {
    if (mask.size() != compiled_->vocabulary().size()) mask = TokenMask(compiled_->vocabulary().size());
    mask.clear();
    const size_t base = chart_.sets();
    const uint32_t distance = distance_.to_end(chart_, base);
    if (distance == 0 || distance == kNoCompletion) return;
    const std::vector<int32_t>& sorted = compiled_->vocabulary().sorted();
    // Past the bound, fewer tokens: each one set still walks a shortest completion.
    chart_.limit_work(kWorkPerCall, kWorkPerByte);
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

// Token masks: which tokens a grammar allows next, over a whole vocabulary, fast enough to run every decoding step.
//
// The idea is XGrammar's (Dong et al., 2024): most of a position's verdicts do not depend on the parse around it.
// For each byte-set position of the grammar, once per grammar and vocabulary, every token is run from that position
// alone: a token consumed before the position's rule ends is accepted whatever the context; one refused before the
// rule ends is refused whatever the context; only a token that runs past the end of the rule ("uncertain") needs the
// real parse. At run time a mask is the union of the accepted sets of the positions the parser is at, plus the
// uncertain tokens checked against the live chart.
#pragma once

#include <chrono>
#include <memory>
#include <vector>

#include "grammar/completion_distance.h"
#include "grammar/grammar.h"
#include "grammar/matcher.h"
#include "grammar/token_vocabulary.h"

namespace tern::grammar {

// Inside the element of a counted repetition (x{m,n}) the count is only known at run time: a token that finishes
// elements is accepted only while the repetition has room for them. `need` is how many elements, counting the one
// in progress, a token takes up; such tokens are kept here by need, and the run-time count picks them.
struct CountedTokens {
    std::vector<uint32_t> rules;  // the position's rule and those around it, up to the repeated one
    struct Needing {
        uint32_t need;
        uint32_t index;  // sorted-order index
    };
    std::vector<Needing> staying;  // need >= 2, ascending
    std::vector<TokenMask> up_to;  // when many: up_to[n - 2] holds those of `staying` with need <= n, n = 2, 3, ...
    // Those the repetition could also have ended inside of (its leaving was noted, not followed): short of room,
    // they are checked live.
    std::vector<Needing> leaving;
};

struct PositionTokens {
    std::vector<int32_t> accepted;  // token ids, when few
    TokenMask accepted_mask;        // when many (dense) ...
    bool dense = false;
    std::vector<uint32_t> uncertain;  // indices into the vocabulary's sorted order, ascending
    std::unique_ptr<CountedTokens> counted;
};

struct CompileStats {
    double milliseconds = 0;
    size_t positions = 0;
    size_t accepted = 0;   // summed over positions
    size_t uncertain = 0;  // summed over positions
};

class CompiledGrammar {
public:
    CompiledGrammar(Grammar grammar, std::shared_ptr<const TokenVocabulary> vocabulary);

    const Grammar& grammar() const { return grammar_; }
    const TokenVocabulary& vocabulary() const { return *vocabulary_; }
    const PositionTokens& tokens_at(uint32_t position) const { return tokens_[position]; }
    const DistanceTables& distances() const { return distances_; }
    const CompileStats& stats() const { return stats_; }

private:
    Grammar grammar_;
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    std::vector<PositionTokens> tokens_;  // by position; empty for rule references and ends
    DistanceTables distances_;
    std::vector<uint32_t> all_tokens_;    // every sorted index, for whole-vocabulary walks
    CompileStats stats_;

    friend class GrammarMatcher;
};

// One request's progress through a compiled grammar, token by token.
class GrammarMatcher {
public:
    explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> compiled);

    // Advances by the token's bytes; false (nothing changed) when the grammar refuses them or the token has none.
    bool accept_token(int32_t id);
    // Sets exactly the tokens whose bytes the grammar allows next (end of text is separate: can_end()).
    void fill_next_token_mask(TokenMask& mask);
    // Whether the text so far is complete (an end-of-sequence token may come now).
    bool can_end() const { return chart_.completed_from_start(0); }
    // Whether nothing but the end may come.
    bool must_end() const { return chart_.next_bytes().none(); }
    // Takes back the last `tokens` accepted tokens.
    void rollback(size_t tokens);
    // The fewest bytes that complete the text (0 when it may end now; kNoCompletion when nothing can).
    uint32_t distance_to_end() { return distance_.to_end(chart_, chart_.sets()); }
    // Sets exactly the tokens that walk a shortest completion: every byte brings the end one byte closer. With a
    // vocabulary that spells every byte, such a token exists until the text is complete.
    void fill_shortest_path_mask(TokenMask& mask);
    size_t tokens_accepted() const { return token_ends_.size(); }
    // Whether the grammar needed more parser work than a request may use (see Chart::limit_work) for one token or
    // one mask: the request cannot go on under it.
    bool overloaded() const { return overloaded_; }

private:
    void add_counted(uint32_t position, const CountedTokens& counted, TokenMask& mask,
                     std::vector<uint32_t>& uncertain) const;

    std::shared_ptr<const CompiledGrammar> compiled_;
    Chart chart_;
    CompletionDistance distance_;
    std::vector<size_t> token_ends_;  // chart sets after each accepted token
    bool overloaded_ = false;
};

}  // namespace tern::grammar

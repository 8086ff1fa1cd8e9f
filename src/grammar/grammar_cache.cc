#include "grammar/grammar_cache.h"

#include "grammar/gbnf.h"

namespace tern::grammar {

Status check_satisfiable(const std::shared_ptr<const CompiledGrammar>& compiled) {
    // A rule derives some text exactly when it has a shortest one.
    if (compiled->distances().min_length(0) == kNoCompletion) {
        return invalid_argument("grammar: no text satisfies it (a rule that can never finish, or an empty choice)");
    }
    GrammarMatcher matcher(compiled);
    TokenMask mask;
    matcher.fill_next_token_mask(mask);
    if (mask.count() == 0 && !matcher.can_end()) {
        return invalid_argument("grammar: no token of the model's vocabulary can begin a text that satisfies it");
    }
    return Status::ok();
}

Result<std::shared_ptr<const CompiledGrammar>> GrammarCache::get(const std::string& text, const std::string& root) {
    const std::string key = root + '\n' + text;  // a rule name has no newline
    {
        std::lock_guard lock(mutex_);
        auto found = entries_.find(key);
        if (found != entries_.end()) {
            recent_.splice(recent_.begin(), recent_, found->second.position);
            ++hits_;
            return found->second.compiled;
        }
    }
    TERN_ASSIGN_OR_RETURN(Grammar grammar, parse_gbnf(text, root));
    auto compiled = std::make_shared<const CompiledGrammar>(std::move(grammar), vocabulary_);
    TERN_RETURN_IF_ERROR(check_satisfiable(compiled));
    std::lock_guard lock(mutex_);
    ++compiles_;
    if (entries_.count(key)) return entries_.at(key).compiled;  // another thread compiled it meanwhile
    recent_.push_front(key);
    entries_.emplace(key, Entry{compiled, recent_.begin()});
    while (entries_.size() > capacity_) {
        entries_.erase(recent_.back());
        recent_.pop_back();
    }
    return std::shared_ptr<const CompiledGrammar>(compiled);
}

size_t GrammarCache::hits() const {
    std::lock_guard lock(mutex_);
    return hits_;
}

size_t GrammarCache::compiles() const {
    std::lock_guard lock(mutex_);
    return compiles_;
}

}  // namespace tern::grammar

// Compiled grammars shared between requests: the same schema sent again (agents and extraction pipelines send the
// same one every time) costs a lookup instead of a compile against the vocabulary. Bounded, least recently used
// out first. Thread-safe: HTTP threads ask it concurrently; a grammar compiles outside the lock.
#pragma once

#include <cstddef>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "base/status.h"
#include "grammar/token_masks.h"

namespace tern::grammar {

class GrammarCache {
public:
    explicit GrammarCache(std::shared_ptr<const TokenVocabulary> vocabulary, size_t capacity = 64)
        : vocabulary_(std::move(vocabulary)), capacity_(capacity) {}

    // The compiled grammar of GBNF `text` from its rule `root`. Errors: the text does not parse, no text satisfies
    // it, or no token of the vocabulary can begin it.
    Result<std::shared_ptr<const CompiledGrammar>> get(const std::string& text, const std::string& root = "root");

    const TokenVocabulary& vocabulary() const { return *vocabulary_; }
    size_t hits() const;
    size_t compiles() const;

private:
    std::shared_ptr<const TokenVocabulary> vocabulary_;
    size_t capacity_;
    mutable std::mutex mutex_;
    std::list<std::string> recent_;  // most recent first
    struct Entry {
        std::shared_ptr<const CompiledGrammar> compiled;
        std::list<std::string>::iterator position;
    };
    std::unordered_map<std::string, Entry> entries_;
    size_t hits_ = 0;
    size_t compiles_ = 0;
};

// Checks that a grammar can produce something with this vocabulary: some sentence exists, and the empty text is one
// or some token can begin one. Otherwise a request would have nothing to sample.
Status check_satisfiable(const std::shared_ptr<const CompiledGrammar>& compiled);

}  // namespace tern::grammar

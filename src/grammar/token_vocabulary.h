// The vocabulary as the grammar sees it: each token's bytes (byte-fallback tokens are one byte; control tokens have
// none and are never allowed by a grammar), sorted so that tokens sharing a prefix are neighbours. Walking the
// sorted list with the parser reuses the work for a shared prefix and skips every token under a prefix the grammar
// refuses, which is what makes a mask over 152k tokens cheap.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace tern::grammar {

class TokenVocabulary {
public:
    explicit TokenVocabulary(std::vector<std::string> token_bytes);

    size_t size() const { return bytes_.size(); }
    const std::string& bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
    // Tokens with bytes, in byte order.
    const std::vector<int32_t>& sorted() const { return sorted_; }
    // How many leading bytes sorted()[i] shares with sorted()[i - 1] (0 for i = 0).
    uint32_t shared_prefix(size_t i) const { return shared_prefix_[i]; }
    // The first sorted index after `i` whose token does not start with the first `length` bytes of sorted()[i].
    size_t prefix_end(size_t i, size_t length) const;

private:
    std::vector<std::string> bytes_;
    std::vector<int32_t> sorted_;
    std::vector<uint32_t> shared_prefix_;
};

// One bit per token id.
class TokenMask {
public:
    explicit TokenMask(size_t tokens = 0) : words_((tokens + 63) / 64, 0), tokens_(tokens) {}
    void set(int32_t id) { words_[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }
    bool test(int32_t id) const { return (words_[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
    void clear() { std::fill(words_.begin(), words_.end(), 0); }
    void merge(const TokenMask& other);
    size_t count() const;
    size_t size() const { return tokens_; }
    const std::vector<uint64_t>& words() const { return words_; }

private:
    std::vector<uint64_t> words_;
    size_t tokens_;
};

}  // namespace tern::grammar

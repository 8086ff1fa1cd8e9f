#include "grammar/token_vocabulary.h"

#include <algorithm>
#include <bit>

namespace tern::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes) : bytes_(std::move(token_bytes)) {
    for (size_t id = 0; id < bytes_.size(); ++id) {
        if (!bytes_[id].empty()) sorted_.push_back(static_cast<int32_t>(id));
    }
    std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) { return bytes(a) < bytes(b); });
    shared_prefix_.resize(sorted_.size(), 0);
    for (size_t i = 1; i < sorted_.size(); ++i) {
        const std::string& previous = bytes(sorted_[i - 1]);
        const std::string& current = bytes(sorted_[i]);
        const size_t limit = std::min(previous.size(), current.size());
        uint32_t shared = 0;
        while (shared < limit && previous[shared] == current[shared]) ++shared;
        shared_prefix_[i] = shared;
    }
}

size_t TokenVocabulary::prefix_end(size_t i, size_t length) const {
    // Tokens sharing the prefix are a run starting at i (sorted order); a following token stays in the run while
    // it shares at least `length` bytes with its predecessor.
    const std::string_view prefix = std::string_view(bytes(sorted_[i])).substr(0, length);
    const auto it = std::partition_point(sorted_.begin() + static_cast<std::ptrdiff_t>(i) + 1, sorted_.end(),
                                         [&](int32_t id) { return std::string_view(bytes(id)).substr(0, length) == prefix; });
    return static_cast<size_t>(it - sorted_.begin());
}

void TokenMask::merge(const TokenMask& other) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] |= other.words_[w];
}

size_t TokenMask::count() const {
    size_t total = 0;
    for (uint64_t word : words_) total += static_cast<size_t>(std::popcount(word));
    return total;
}

}  // namespace tern::grammar

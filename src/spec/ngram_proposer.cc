#include "spec/ngram_proposer.h"

#include <algorithm>

namespace tern::spec {

std::vector<int32_t> propose_ngram(std::span<const int32_t> tokens, const NgramOptions& options) {
    const int64_t length = std::ssize(tokens);
    for (int n = std::min<int64_t>(options.max_n, length - 1); n >= options.min_n; --n) {
        const std::span<const int32_t> suffix = tokens.subspan(static_cast<size_t>(length - n));
        // The latest earlier occurrence: the nearest context is the likeliest to continue the same way. It must end
        // before the suffix does, so that at least one token follows it.
        for (int64_t start = length - n - 1; start >= 0; --start) {
            if (!std::equal(suffix.begin(), suffix.end(), tokens.begin() + start)) continue;
            const int64_t follow = start + n;
            const int64_t count = std::min<int64_t>(options.num_tokens, length - follow);
            return {tokens.begin() + follow, tokens.begin() + follow + count};
        }
    }
    return {};
}

}  // namespace tern::spec

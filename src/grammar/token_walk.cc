#include "grammar/token_walk.h"

#include <algorithm>
#include <string_view>

namespace tern::grammar {
namespace {

size_t common_prefix(std::string_view a, std::string_view b) {
    const size_t limit = std::min(a.size(), b.size());
    size_t n = 0;
    while (n < limit && a[n] == b[n]) ++n;
    return n;
}

class TokenWalk {
public:
    TokenWalk(Chart& chart, const std::optional<WalkContext>& context, const ByteFilter& keep)
        : chart_(chart), context_(context), keep_(keep), base_(chart.sets()) {}
    ~TokenWalk() { chart_.truncate(base_); }

    // Scans as much of `bytes` as the chart takes, reusing the prefix shared with the last token; returns how many
    // bytes were taken.
    size_t run(std::string_view bytes) {
        const size_t keep = common_prefix(path_, bytes);
        chart_.truncate(base_ + keep);
        may_leave_.resize(keep + 1);
        size_t depth = keep;
        while (depth < bytes.size()) {
            // Whether the rule is complete here and the next byte is one its context could take.
            const bool ended = context_ && (context_->counted ? chart_.may_leave_repetition()
                                                              : chart_.completed_from_start(context_->rule));
            const bool leaves = ended && context_->follow[static_cast<uint8_t>(bytes[depth])];
            may_leave_.push_back(may_leave_.back() || leaves);
            if (!chart_.scan(static_cast<uint8_t>(bytes[depth]))) break;
            if (keep_ && !keep_(depth + 1)) {
                chart_.truncate(chart_.sets() - 1);
                break;
            }
            ++depth;
        }
        path_ = bytes.substr(0, depth);
        return depth;
    }
    // Whether, within the first `length` bytes, the text could have left the rule for its context.
    bool may_leave(size_t length) const { return may_leave_[length]; }

private:
    Chart& chart_;
    const std::optional<WalkContext>& context_;
    const ByteFilter& keep_;
    size_t base_;
    std::string_view path_;
    std::vector<bool> may_leave_{false};  // by length of the prefix
};

}  // namespace

void walk_tokens(Chart& chart, const TokenVocabulary& vocabulary, const std::vector<uint32_t>& candidates,
                 const std::optional<WalkContext>& context, const std::function<void(uint32_t, TokenVerdict)>& verdict,
                 const ByteFilter& keep) {
    TokenWalk walk(chart, context, keep);
    const std::vector<int32_t>& sorted = vocabulary.sorted();
    for (size_t k = 0; k < candidates.size();) {
        const uint32_t index = candidates[k];
        const std::string& bytes = vocabulary.bytes(sorted[index]);
        const size_t taken = walk.run(bytes);
        if (taken == bytes.size()) {
            const bool may_leave = context && context->counted && walk.may_leave(taken);
            verdict(index, may_leave ? TokenVerdict::kAcceptedMayLeave : TokenVerdict::kAccepted);
            ++k;
            continue;
        }
        // Every token starting with the taken bytes and the refused one fares the same.
        const size_t end_index = vocabulary.prefix_end(index, taken + 1);
        const auto end = std::lower_bound(candidates.begin() + static_cast<std::ptrdiff_t>(k) + 1, candidates.end(),
                                          static_cast<uint32_t>(end_index));
        const size_t next = static_cast<size_t>(end - candidates.begin());
        if (walk.may_leave(taken + 1)) {
            for (size_t j = k; j < next; ++j) verdict(candidates[j], TokenVerdict::kUncertain);
        }
        k = next;
    }
}

}  // namespace tern::grammar

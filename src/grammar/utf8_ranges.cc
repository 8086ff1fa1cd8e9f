#include "grammar/utf8_ranges.h"

#include <algorithm>

#include "base/utf8.h"

namespace tern::grammar {

CodePointRanges normalize(CodePointRanges ranges) {
    CodePointRanges cut;
    for (auto [lo, hi] : ranges) {
        hi = std::min(hi, kMaxCodePoint);
        if (lo > hi) continue;
        // Surrogates are not characters and have no UTF-8 spelling.
        if (lo < 0xD800 && hi >= 0xD800) cut.emplace_back(lo, 0xD7FF);
        if (hi > 0xDFFF && lo <= 0xDFFF) cut.emplace_back(0xE000, hi);
        if (hi < 0xD800 || lo > 0xDFFF) cut.emplace_back(lo, hi);
    }
    std::sort(cut.begin(), cut.end());
    CodePointRanges merged;
    for (const auto& range : cut) {
        if (!merged.empty() && range.first <= merged.back().second + 1) {
            merged.back().second = std::max(merged.back().second, range.second);
        } else {
            merged.push_back(range);
        }
    }
    return merged;
}

CodePointRanges complement(const CodePointRanges& ranges) {
    CodePointRanges result;
    uint32_t next = 0;
    for (const auto& [lo, hi] : normalize(ranges)) {
        if (lo > next) result.emplace_back(next, lo - 1);
        next = hi + 1;
    }
    if (next <= kMaxCodePoint) result.emplace_back(next, kMaxCodePoint);
    return normalize(result);
}

std::string encode_utf8(uint32_t cp) {
    std::string out;
    append_utf8(out, cp);
    return out;
}

bool decode_utf8(std::string_view text, size_t& pos, uint32_t& cp) {
    const Utf8Step step = next_utf8_sequence(text.substr(pos));
    if (step.status != Utf8Status::kValid) return false;
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[pos + i]); };
    static constexpr uint8_t kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
    cp = byte(0) & kLeadMask[step.length];
    for (size_t i = 1; i < step.length; ++i) cp = (cp << 6) | (byte(i) & 0x3F);
    pos += step.length;
    return true;
}

namespace {

size_t encoded_length(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

// [lo, hi] with the same encoded length, split until every byte position is an independent range (the bytes after
// the first differing one span their whole continuation range), then spelled byte set by byte set.
void split_range(uint32_t lo, uint32_t hi, std::vector<Sequence>& out) {
    const size_t length = encoded_length(lo);
    for (size_t i = 1; i < length; ++i) {
        const uint32_t low_bits = (1u << (6 * i)) - 1;
        if ((lo & ~low_bits) == (hi & ~low_bits)) continue;
        if ((lo & low_bits) != 0) {
            split_range(lo, lo | low_bits, out);
            split_range((lo | low_bits) + 1, hi, out);
            return;
        }
        if ((hi & low_bits) != low_bits) {
            split_range(lo, (hi & ~low_bits) - 1, out);
            split_range(hi & ~low_bits, hi, out);
            return;
        }
    }
    const std::string first = encode_utf8(lo);
    const std::string last = encode_utf8(hi);
    Sequence sequence;
    for (size_t i = 0; i < length; ++i) {
        ByteSet set;
        for (int b = static_cast<uint8_t>(first[i]); b <= static_cast<uint8_t>(last[i]); ++b) set.set(b);
        sequence.push_back(Element::of_bytes(set));
    }
    out.push_back(std::move(sequence));
}

}  // namespace

std::vector<Sequence> utf8_sequences(const CodePointRanges& ranges) {
    ByteSet ascii;
    std::vector<Sequence> longer;
    static constexpr uint32_t kLengthEnds[] = {0x7F, 0x7FF, 0xFFFF, kMaxCodePoint};
    for (auto [lo, hi] : normalize(ranges)) {
        for (uint32_t end : kLengthEnds) {
            if (lo > end) continue;
            const uint32_t piece_hi = std::min(hi, end);
            if (end == 0x7F) {
                for (uint32_t cp = lo; cp <= piece_hi; ++cp) ascii.set(cp);
            } else {
                split_range(lo, piece_hi, longer);
            }
            if (hi <= end) break;
            lo = end + 1;
        }
    }
    std::vector<Sequence> sequences;
    if (ascii.any()) sequences.push_back({Element::of_bytes(ascii)});
    sequences.insert(sequences.end(), longer.begin(), longer.end());
    return sequences;
}

}  // namespace tern::grammar

#include "tokenizer/special_tokens.h"

#include <algorithm>

namespace tern {
namespace {

bool any_fragment_contains(const std::vector<TextFragment>& fragments, std::string_view needle) {
    return std::any_of(fragments.begin(), fragments.end(), [&](const TextFragment& fragment) {
        return fragment.token == kNoToken && fragment.text.find(needle) != std::string_view::npos;
    });
}

// Replaces every occurrence of `needle` in the plain fragments by `token`, left to right, without overlap.
std::vector<TextFragment> split_on(const std::vector<TextFragment>& fragments, std::string_view needle, int32_t token) {
    std::vector<TextFragment> result;
    result.reserve(fragments.size() + 2);
    for (const TextFragment& fragment : fragments) {
        if (fragment.token != kNoToken) {
            result.push_back(fragment);
            continue;
        }
        const std::string_view text = fragment.text;
        size_t pos = 0;
        for (size_t found = text.find(needle); found != std::string_view::npos; found = text.find(needle, pos)) {
            if (found > pos) result.push_back({kNoToken, text.substr(pos, found - pos)});
            result.push_back({token, {}});
            pos = found + needle.size();
        }
        if (pos < text.size()) result.push_back({kNoToken, text.substr(pos)});
    }
    return result;
}

}  // namespace

std::vector<TextFragment> partition_special(const TokenTable& table, std::string_view text, bool parse_special) {
    std::vector<TextFragment> fragments;
    if (text.empty()) return fragments;
    fragments.push_back({kNoToken, text});
    for (int32_t id : table.special_tokens()) {
        if (!parse_special && table.has_attr(id, kAttrControl | kAttrUnknown)) continue;
        const std::string& needle = table.text(id);
        if (!any_fragment_contains(fragments, needle)) continue;
        fragments = split_on(fragments, needle, id);
    }
    return fragments;
}

}  // namespace tern

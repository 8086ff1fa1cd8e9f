#include "server/infill.h"

namespace tern::server {

std::optional<FimTokens> fim_tokens(const Tokenizer& tokenizer) {
    const FimTokens fim{tokenizer.fim_pre_id(), tokenizer.fim_suf_id(), tokenizer.fim_mid_id()};
    if (fim.prefix < 0 || fim.suffix < 0 || fim.middle < 0) return std::nullopt;
    return fim;
}

std::vector<int32_t> infill_prompt(const FimTokens& fim, int32_t bos, std::span<const int32_t> prefix,
                                   std::span<const int32_t> suffix) {
    std::vector<int32_t> ids;
    ids.reserve(prefix.size() + suffix.size() + 4);
    if (bos >= 0) ids.push_back(bos);
    ids.push_back(fim.prefix);
    ids.insert(ids.end(), prefix.begin(), prefix.end());
    ids.push_back(fim.suffix);
    ids.insert(ids.end(), suffix.begin(), suffix.end());
    ids.push_back(fim.middle);
    return ids;
}

}  // namespace tern::server

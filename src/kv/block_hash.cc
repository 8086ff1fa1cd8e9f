#include "kv/block_hash.h"

#include <xxhash.h>

#include "base/check.h"

namespace tern::kv {

BlockHash prefix_root(uint64_t seed, std::string_view cache_salt) {
    return XXH3_64bits_withSeed(cache_salt.data(), cache_salt.size(), seed);
}

BlockHash hash_block_tokens(BlockHash parent_hash, std::span<const TokenId> tokens) {
    return XXH3_64bits_withSeed(tokens.data(), tokens.size_bytes(), parent_hash);
}

void extend_block_hashes(BlockHash root, std::span<const TokenId> tokens, int block_size, int num_blocks,
                         std::vector<BlockHash>& hashes) {
    TERN_CHECK(block_size > 0) << "block_size " << block_size;
    TERN_CHECK(static_cast<size_t>(num_blocks) * block_size <= tokens.size())
        << num_blocks << " full blocks of " << block_size << " need more than " << tokens.size() << " tokens";
    for (size_t block_idx = hashes.size(); block_idx < static_cast<size_t>(num_blocks); ++block_idx) {
        BlockHash parent_hash = block_idx == 0 ? root : hashes[block_idx - 1];
        hashes.push_back(hash_block_tokens(parent_hash, tokens.subspan(block_idx * block_size, block_size)));
    }
}

}  // namespace tern::kv

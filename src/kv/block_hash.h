// Chained hashes of full KV blocks for the prefix cache: a block's hash covers its own token ids and, through the
// parent hash, every token before it. Pure arithmetic on token ids; it knows nothing about blocks or memory.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace tern::kv {

using TokenId = int32_t;
using BlockHash = uint64_t;

// The parent hash of a sequence's first block: XXH3-64 of the request's cache salt seeded with `seed`.
// NOTE(kv): KvManager draws the seed at random per process, so nobody outside the process can compute block hashes
// and craft a prompt whose blocks collide with another tenant's cached ones (vLLM's CVE-2025-25183 was that, with a
// fixed seed). The salt (vLLM's cache_salt) keeps apart tenants who must not share cached prefixes: a hit is faster,
// and that timing tells whether someone else sent the same prompt.
BlockHash prefix_root(uint64_t seed, std::string_view cache_salt);

// XXH3-64 of the block's token ids seeded with the parent hash, so the same tokens after a different prefix give a
// different hash. NOTE(kv): 64 bits, not vLLM's sha256: with a million cached blocks the chance of any collision
// is about 3e-8, and a hash per block stays a few nanoseconds.
BlockHash hash_block_tokens(BlockHash parent_hash, std::span<const TokenId> tokens);

// Appends to `hashes` the chained hashes of the full blocks of `tokens` (the first one's parent is `root`) until it
// holds `num_blocks` entries. `hashes` may already hold the first blocks' hashes (they are kept, so a request hashes
// each block once). `num_blocks` * `block_size` must not exceed tokens.size() (checked).
void extend_block_hashes(BlockHash root, std::span<const TokenId> tokens, int block_size, int num_blocks,
                         std::vector<BlockHash>& hashes);

}  // namespace tern::kv

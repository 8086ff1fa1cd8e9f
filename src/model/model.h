// A decoder-only transformer of the families in model/hparams.h on the CPU. It computes logits for a flat batch of
// tokens (prefill chunks and decode steps of several sequences mixed) against a KV cache. It knows nothing of
// requests, text or sampling: callers pass token ids, positions and KV slots.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/status.h"
#include "base/thread_pool.h"
#include "formats/gguf.h"
#include "kernels/kernels.h"
#include "model/expert_rows.h"
#include "model/hparams.h"
#include "model/kv_cache.h"
#include "model/kv_groups.h"
#include "model/weights.h"

namespace tern {

struct TokenBatch {
    std::vector<int32_t> tokens;
    std::vector<int32_t> positions;    // position of each token within its sequence
    std::vector<int32_t> slots;        // the token's sequence: an index into the block tables below, or, when the
                                       // batch has none, a slot of the cache's own fixed tables (one KV group)
    std::vector<uint8_t> want_logits;  // 1 where the caller needs this token's next-token logits
    std::vector<uint8_t> want_hidden;  // 1 where the caller needs its final normed hidden state (embeddings)
    // Block tables of the batch's sequences, one per KV group (model/kv_groups.h: 1, or the model's kv_groups()),
    // concatenated: sequence s's table of group g is block_ids[table_starts[s * num_groups + g],
    // table_starts[s * num_groups + g + 1]). Position p of s lives in block p / block_size of each table.
    int32_t num_groups = 1;
    std::vector<int32_t> table_starts;
    std::vector<int32_t> block_ids;

    void add(int32_t token, int32_t position, int32_t slot, bool logits, bool hidden = false) {
        tokens.push_back(token);
        positions.push_back(position);
        slots.push_back(slot);
        want_logits.push_back(logits ? 1 : 0);
        want_hidden.push_back(hidden ? 1 : 0);
    }
    // Appends a sequence's block table of each group, in group order, and returns its index for add().
    int32_t add_sequence(std::initializer_list<std::span<const int32_t>> tables) {
        return add_sequence(std::span<const std::span<const int32_t>>(tables.begin(), tables.size()));
    }
    int32_t add_sequence(std::span<const std::span<const int32_t>> tables) {
        if (table_starts.empty()) table_starts.push_back(0);
        for (std::span<const int32_t> table : tables) {
            block_ids.insert(block_ids.end(), table.begin(), table.end());
            table_starts.push_back(static_cast<int32_t>(block_ids.size()));
        }
        return static_cast<int32_t>(num_sequences()) - 1;
    }
    int64_t num_sequences() const {
        return table_starts.empty() ? 0 : (static_cast<int64_t>(table_starts.size()) - 1) / num_groups;
    }
    void clear() {
        tokens.clear(), positions.clear(), slots.clear(), want_logits.clear(), want_hidden.clear();
        table_starts.clear(), block_ids.clear();
    }
    int64_t size() const { return static_cast<int64_t>(tokens.size()); }
};

struct ModelOptions {
    bool repack = true;                             // copy Q4_0/Q8_0/K-quant matrices into the int8 kernels' layouts
    const kernels::KernelTable* kernels = nullptr;  // the instruction set to compute with; nullptr = kernels()
    // The longest sequence the caller will run (0: the model's trained context). LongRoPE models (Phi-3 128k) take
    // their long RoPE factors when it exceeds their original context, as llama.cpp does by its context size.
    int64_t context_length = 0;
};

class Model {
public:
    // Opens and validates a GGUF model and copies what it computes with out of the file, which is then unmapped:
    // a model file truncated or rewritten on disk while the model serves cannot take the process down with SIGBUS
    // (a mapped read past a truncated file's end), and the model keeps answering from what it loaded. The cost is
    // load-time copying of the matrices not repacked anyway (the token embedding, f32/f16/bf16 and unrepacked types)
    // and memory that is no longer shared page cache. file() keeps the metadata; its tensors' data are null.
    static Result<std::unique_ptr<Model>> load(const std::string& path, const ModelOptions& options = {});
    ~Model();

    const HParams& hparams() const { return hparams_; }
    // How the layers share KV blocks in a paged cache with one table per group (model/kv_groups.h).
    const KvGroups& kv_groups() const { return kv_groups_; }
    const GgufFile& file() const { return *file_; }
    const ModelWeights& weights() const { return weights_; }
    const kernels::KernelTable& kernel_table() const { return *kernels_; }
    // The bytes of the file's tensors as stored (what a decode step reads at most, before any repacking).
    int64_t stored_weight_bytes() const;

    // Runs one forward pass. Within a slot, a token attends to cache positions 0..its own position, so every
    // earlier position of that slot must have been computed already (in this batch or an earlier one).
    // On success `logits` holds one row of vocab_size floats per token with want_logits, in batch order, and
    // `hidden` (when given) one row of embedding_dim floats per token with want_hidden: the final RMS-normed hidden
    // state, the input of the output matrix. Not thread-safe: one forward at a time per Model.
    Status forward(const TokenBatch& batch, KvCache* cache, ThreadPool* pool, std::vector<float>* logits,
                   std::vector<float>* hidden = nullptr);

    struct Workspace;  // scratch buffers, sized once for the largest batch seen (model/workspace.h)

private:
    Model() = default;
    Status validate(const TokenBatch& batch, const KvCache& cache) const;
    Status validate_tables(const TokenBatch& batch, const KvCache& cache) const;
    Status select_groups(const TokenBatch& batch, const KvCache& cache);
    std::span<const int32_t> block_table(const TokenBatch& batch, const KvCache& cache, int64_t token_idx,
                                         int64_t group) const;
    void embed_tokens(const TokenBatch& batch);
    void attention_block(int64_t layer_idx, const TokenBatch& batch, KvCache* cache, ThreadPool* pool);
    void rope_and_store(int64_t layer_idx, const TokenBatch& batch, int64_t token_idx, KvCache* cache);
    void normalize_heads(const std::vector<float>& weight, float* heads, int64_t num_heads) const;
    void attend(int64_t layer_idx, const TokenBatch& batch, KvCache* cache, ThreadPool* pool);
    void feed_forward_block(int64_t layer_idx, int64_t num_tokens, ThreadPool* pool);
    void post_norm(const std::vector<float>& weight, int64_t num_tokens, ThreadPool* pool);
    void soft_cap_logits(std::vector<float>* logits, ThreadPool* pool) const;
    void gated_ffn(const PackedWeights& gate, const PackedWeights& up, const PackedWeights& down, int64_t count,
                   int64_t width, float* out, ThreadPool* pool);
    // mixture_of_experts.cc
    void expert_feed_forward(int64_t layer_idx, int64_t num_tokens, ThreadPool* pool);
    void route_tokens(int64_t num_tokens);
    // Consecutive batches of the step's experts (ExpertRows::batches) run together, their rows from first_row on.
    struct ExpertWave {
        std::span<const ExpertBatch> batches;
        int64_t first_row;
    };
    void assign_expert_slots(const ExpertWave& wave);
    void prepare_expert_inputs(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool);
    void expert_gate_up(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool);
    void expert_gated_products(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool);
    void expert_down(const LayerWeights& layer, const ExpertWave& wave, ThreadPool* pool);
    void add_expert_outputs(int64_t num_tokens, const ExpertWave& wave, ThreadPool* pool);
    void run_shared_expert(const LayerWeights& layer, int64_t num_tokens, ThreadPool* pool);
    Status compute_outputs(const TokenBatch& batch, ThreadPool* pool, std::vector<float>* logits,
                           std::vector<float>* hidden);

    void prepare_input(const float* x, int64_t num_tokens, int64_t length, bool quantize, ThreadPool* pool);
    void norm_input(const float* delta, const std::vector<float>& norm_weight, int64_t num_tokens, bool quantize,
                    ThreadPool* pool);
    void add_and_norm(int64_t token_idx, const float* delta, const std::vector<float>& norm_weight, float* out);
    // One product of the current input: its weights and where its output goes.
    struct MatmulOutput {
        const PackedWeights* weights;
        float* y;
    };
    void matmul(const PackedWeights& weights, float* y, ThreadPool* pool);
    void matmuls(std::initializer_list<MatmulOutput> outputs, ThreadPool* pool);

    std::unique_ptr<GgufFile> file_;
    const kernels::KernelTable* kernels_ = nullptr;
    HParams hparams_;
    KvGroups kv_groups_;           // for batches with a table per group
    KvGroups single_group_;        // for batches with one table (or none)
    const KvGroups* groups_ = nullptr;  // the current forward's
    ModelWeights weights_;
    std::unique_ptr<Workspace> workspace_;
};

}  // namespace tern

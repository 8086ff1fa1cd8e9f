// Binds a GGUF file's tensors to the layer structure of the architectures in model/hparams.h, checking every name and shape.
// Matrices are bound in the file's mapping (zero copy) unless repacked for the int8 kernels; small vectors (norms,
// biases, rope factors) are converted to f32 once at load. copy_out_of_mapping() then gives the model its own copy
// of what it still reads there, so that the file can be released (see Model::load for why).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "base/status.h"
#include "formats/gguf.h"
#include "model/hparams.h"
#include "kernels/packed_weights.h"
#include "tensor/matrix_view.h"

namespace tern {

using kernels::PackedWeights;

struct LayerWeights {
    std::vector<float> attn_norm;
    PackedWeights wq, wk, wv, wo;
    std::vector<float> bq, bk, bv;  // qwen2 only; empty for llama
    std::vector<float> q_norm, k_norm;  // qwen3, gemma3: RMSNorm weights of every q and k head (head_dim each)
    std::vector<float> attn_post_norm, ffn_post_norm;  // gemma: RMSNorms of the blocks' outputs; empty otherwise
    std::vector<float> ffn_norm;
    PackedWeights w_gate, w_up, w_down;  // a dense feed-forward, or a mixture's shared expert (Qwen2-MoE)
    std::vector<float> shared_expert_gate;  // Qwen2-MoE: sigmoid(x . this) scales the shared expert
    // A mixture of experts instead: the router (num_experts rows) and each expert's gate, up and down matrices,
    // slices of the file's 3-D expert tensors.
    PackedWeights router;
    std::vector<PackedWeights> expert_gate, expert_up, expert_down;
};

struct ModelWeights {
    MatrixView token_embedding;  // vocab_size rows of embedding_dim
    std::shared_ptr<uint8_t> token_embedding_storage;  // its bytes, after copy_out_of_mapping()
    std::vector<float> output_norm;
    PackedWeights output;        // the token embedding itself when the output matrix is tied
    bool output_tied = false;
    std::vector<float> rope_freq_factors;  // llama3 or LongRoPE scaling: frequencies are divided by these; or empty
    std::vector<LayerWeights> layers;
};

// Fills `hparams->vocab_size` from the embedding matrix. With `repack`, Q4_0, Q8_0, Q4_K, Q5_K and Q6_K matrices
// are copied into the interleaved layouts of kernels/packed_weights.h (same bytes per weight, faster to stream).
// `context_length` (0: the model's trained context) is the longest sequence the caller runs: LongRoPE models choose
// their factors by it. `pool` (optional) repacks each matrix's row groups on several threads.
Result<ModelWeights> bind_weights(const GgufFile& file, HParams* hparams, bool repack, int64_t context_length = 0,
                                  ThreadPool* pool = nullptr);

// Copies the token embedding and every matrix left row-major into memory of the weights' own (huge pages), and
// forgets the file bytes behind repacked matrices (their views keep shape and type, with null data). Afterwards
// nothing in `weights` points into the file, and the pages of the file's copied bytes are dropped from resident
// memory. Fails only when the memory cannot be had.
Status copy_out_of_mapping(const GgufFile& file, ModelWeights* weights);

}  // namespace tern

// Which Hugging Face tensor becomes which GGUF tensor, with its expected shape and the row order llama's
// q/k projections need. Names follow llama.cpp's GGUF conventions, which model/weights.cc binds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "convert/hf_config.h"

namespace tern {

struct TensorPlan {
    std::string hf_name;
    std::string gguf_name;
    std::vector<int64_t> hf_shape;  // expected, as stored: [rows, row_length] or [length]
    int64_t rope_heads = 0;         // > 0: rows are reordered head by head, see rope_source_row
    bool keep_f32 = false;          // vectors (norms, biases) stay F32 whatever the requested type
    bool optional = false;          // lm_head: without it the output shares token_embd, as when tied
    float add = 0.0f;               // added to every element: Gemma's norms multiply by 1 + w, GGUF holds 1 + w
    // > 0: a mixture's expert matrices, stacked into one 3-D GGUF tensor; hf_name holds "{expert}" where each
    // expert's tensor name has its index, and hf_shape is one expert's.
    int64_t num_experts = 0;

    // The Hugging Face name of expert `expert`'s part (hf_name itself when the plan has no experts).
    std::string part_name(int64_t expert) const;
    int64_t num_parts() const { return num_experts > 0 ? num_experts : 1; }
};

// Every tensor a checkpoint with `config` holds, in GGUF file order.
std::vector<TensorPlan> plan_tensors(const HfConfig& config);

// Tensors a checkpoint may hold that have no GGUF counterpart (precomputed rotary inverse frequencies).
bool is_skipped_hf_tensor(std::string_view name);

// Hugging Face stores each head of a llama q/k projection with the two rotary halves apart (rows
// x[0..d/2) then x[d/2..d)); GGUF llama files rotate adjacent pairs (ggml's normal RoPE), so llama.cpp's converter
// interleaves the halves: GGUF row 2i + j of a head is Hugging Face row j * d/2 + i of the same head.
// Returns the Hugging Face row that lands at GGUF row `row` of a matrix with `num_rows` rows over `num_heads` heads.
// Qwen2 (NEOX-style rotation over halves) is stored as is.
int64_t rope_source_row(int64_t row, int64_t num_rows, int64_t num_heads);

}  // namespace tern

// How attention kernels form a query's scores from its keys (kernels.h's AttentionFn and its ISA versions).
#pragma once

#include <cstdint>

namespace tern::kernels {

// How a query's attention scores are formed: s_j = q . k_j * scale; with a soft cap c > 0 (Gemma 2),
// s_j = c * tanh(s_j / c), which bounds the scores the softmax sees; with a window w > 0 (a sliding-window layer),
// a query that has num_keys keys attends only to the last w of them (positions num_keys - w .. num_keys - 1, as
// Hugging Face's and llama.cpp's masks: query position - key position < w).
struct AttentionScoring {
    float scale = 1.0f;
    float softcap = 0.0f;
    int64_t window = 0;

    int64_t first_key(int64_t num_keys) const { return window > 0 && num_keys > window ? num_keys - window : 0; }
};
}  // namespace tern::kernels

// Which layers of a model slide (attend to a window of recent positions) and which attend to every position: one
// rule for the engine's KV groups (model/hparams.h) and the planner's (plan/model_shape.cc), so that the two lay a
// model out alike.
#pragma once

#include <cstdint>
#include <string_view>

namespace tern::kv {

// The pattern a family's windowed layers follow when the file gives none (llama.cpp's set_swa_pattern): Gemma 2
// slides in every other layer, Gemma 3 in five of six; 0, every layer slides (Mistral 7B v0.1, Phi-3-mini).
inline int64_t default_sliding_pattern(std::string_view architecture) {
    return architecture == "gemma2" ? 2 : architecture == "gemma3" ? 6 : 0;
}

// Whether `layer` slides: every layer under pattern 0, else all but the last of each `pattern` layers.
inline bool layer_slides(int64_t layer, int64_t pattern) {
    return pattern <= 0 || layer % pattern < pattern - 1;
}

}  // namespace tern::kv

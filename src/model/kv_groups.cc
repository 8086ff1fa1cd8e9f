#include "model/kv_groups.h"

#include <algorithm>

namespace tern {

KvGroups single_kv_group(const HParams& hparams) {
    KvGroups groups;
    const bool all_slide = hparams.has_sliding_layers() && hparams.sliding_window_pattern == 0;
    groups.windows = {all_slide ? static_cast<int>(hparams.sliding_window) : 0};
    groups.layers_per_block = hparams.num_layers;
    for (int64_t layer = 0; layer < hparams.num_layers; ++layer) {
        groups.group_of_layer.push_back(0);
        groups.slot_of_layer.push_back(static_cast<int32_t>(layer));
    }
    return groups;
}

KvGroups kv_groups_for(const HParams& hparams) {
    std::vector<int64_t> sliding, full;
    for (int64_t layer = 0; layer < hparams.num_layers; ++layer) {
        (hparams.is_sliding_layer(layer) ? sliding : full).push_back(layer);
    }
    if (sliding.empty() || full.empty()) return single_kv_group(hparams);
    const kv::KvGroupLayout layout = kv::kv_group_layout(static_cast<int64_t>(full.size()),
                                                         static_cast<int64_t>(sliding.size()),
                                                         static_cast<int>(hparams.sliding_window));
    KvGroups groups;
    groups.windows = layout.group_windows;
    groups.layers_per_block = layout.layers_per_block;
    groups.group_of_layer.resize(static_cast<size_t>(hparams.num_layers));
    groups.slot_of_layer.resize(static_cast<size_t>(hparams.num_layers));
    // Full groups come first, then sliding ones; within a kind, layers fill each group's slots in order.
    const int64_t num_full_groups = (static_cast<int64_t>(full.size()) + layout.layers_per_block - 1) /
                                    layout.layers_per_block;
    for (const auto* layers : {&full, &sliding}) {
        const int64_t first_group = layers == &full ? 0 : num_full_groups;
        for (size_t idx = 0; idx < layers->size(); ++idx) {
            const auto layer = static_cast<size_t>((*layers)[idx]);
            const auto rank = static_cast<int64_t>(idx);
            groups.group_of_layer[layer] = static_cast<int32_t>(first_group + rank / layout.layers_per_block);
            groups.slot_of_layer[layer] = static_cast<int32_t>(rank % layout.layers_per_block);
        }
    }
    return groups;
}

}  // namespace tern

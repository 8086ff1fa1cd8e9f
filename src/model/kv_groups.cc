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
    KvGroups groups;
    groups.layers_per_block = static_cast<int64_t>(std::min(sliding.size(), full.size()));
    groups.group_of_layer.resize(static_cast<size_t>(hparams.num_layers));
    groups.slot_of_layer.resize(static_cast<size_t>(hparams.num_layers));
    for (const auto* layers : {&full, &sliding}) {
        const int window = layers == &full ? 0 : static_cast<int>(hparams.sliding_window);
        for (size_t idx = 0; idx < layers->size(); ++idx) {
            if (idx % static_cast<size_t>(groups.layers_per_block) == 0) groups.windows.push_back(window);
            const auto layer = static_cast<size_t>((*layers)[idx]);
            groups.group_of_layer[layer] = static_cast<int32_t>(groups.windows.size() - 1);
            groups.slot_of_layer[layer] = static_cast<int32_t>(idx % static_cast<size_t>(groups.layers_per_block));
        }
    }
    return groups;
}

}  // namespace tern

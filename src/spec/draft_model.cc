#include "spec/draft_model.h"

#include <fmt/format.h>

#include <algorithm>

namespace tern::spec {

Result<std::unique_ptr<DraftModel>> DraftModel::create(Model& model, int64_t vocab_size, int64_t num_blocks,
                                                       int64_t block_size, KvType type) {
    if (model.hparams().vocab_size != vocab_size) {
        return invalid_argument(fmt::format("the draft model has {} tokens in its vocabulary, the target {}: a draft "
                                            "model must share the target's vocabulary (a smaller model of the same "
                                            "family, or a lower-bit quantization of the same model)",
                                            model.hparams().vocab_size, vocab_size));
    }
    TERN_ASSIGN_OR_RETURN(std::unique_ptr<KvCache> cache,
                          KvCache::create_paged(model.hparams(), num_blocks, block_size, type));
    return std::unique_ptr<DraftModel>(new DraftModel(model, std::move(cache)));
}

Result<std::vector<std::vector<int32_t>>> DraftModel::propose(std::span<const DraftSequence> sequences,
                                                              ThreadPool& pool) {
    const int64_t vocab_size = model_.hparams().vocab_size;
    std::vector<std::vector<int32_t>> drafts(sequences.size());
    int num_forwards = 1;
    for (const DraftSequence& sequence : sequences) num_forwards = std::max(num_forwards, sequence.num_drafts);
    for (int step = 0; step < num_forwards; ++step) {
        batch_.clear();
        std::vector<size_t> drafting;  // the sequences whose last row in this forward gives a draft, in row order
        for (size_t idx = 0; idx < sequences.size(); ++idx) {
            const DraftSequence& sequence = sequences[idx];
            if ((step > 0 && step >= sequence.num_drafts) || sequence.tokens.empty()) continue;
            const int32_t slot = batch_.add_sequence({sequence.block_table});
            const bool drafts_here = step < sequence.num_drafts;
            if (step == 0) {
                for (size_t pos = 0; pos < sequence.tokens.size(); ++pos) {
                    const bool last = pos + 1 == sequence.tokens.size();
                    batch_.add(sequence.tokens[pos], sequence.first_position + static_cast<int32_t>(pos), slot,
                               last && drafts_here);
                }
            } else {
                const int32_t position = sequence.first_position + static_cast<int32_t>(sequence.tokens.size()) + step - 1;
                batch_.add(drafts[idx].back(), position, slot, true);
            }
            if (drafts_here) drafting.push_back(idx);
        }
        TERN_RETURN_IF_ERROR(model_.forward(batch_, cache_.get(), &pool, &logits_));
        for (size_t row = 0; row < drafting.size(); ++row) {
            const float* logits = logits_.data() + static_cast<int64_t>(row) * vocab_size;
            drafts[drafting[row]].push_back(static_cast<int32_t>(std::max_element(logits, logits + vocab_size) - logits));
        }
    }
    return drafts;
}

}  // namespace tern::spec

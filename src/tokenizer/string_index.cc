#include "tokenizer/string_index.h"

#include <bit>
#include <functional>

#include "base/check.h"

namespace tern {

StringIndex::StringIndex(size_t count) {
    const size_t size = std::bit_ceil(std::max<size_t>(16, count * 2));
    slots_.resize(size);
    mask_ = size - 1;
}

uint64_t StringIndex::hash(std::string_view text) { return std::hash<std::string_view>{}(text); }

int32_t StringIndex::insert(const std::vector<std::string>& keys, int32_t position) {
    TERN_CHECK(!slots_.empty()) << "StringIndex used without a capacity";
    const std::string_view text = keys[position];
    const uint64_t code = hash(text);
    const auto tag = static_cast<uint32_t>(code >> 32);
    for (size_t i = code & mask_;; i = (i + 1) & mask_) {
        Slot& slot = slots_[i];
        if (slot.position < 0) {
            slot = {position, tag};
            return position;
        }
        if (slot.tag == tag && keys[slot.position] == text) return slot.position;
    }
}

int32_t StringIndex::find(const std::vector<std::string>& keys, std::string_view text) const {
    if (slots_.empty()) return -1;
    const uint64_t code = hash(text);
    const auto tag = static_cast<uint32_t>(code >> 32);
    for (size_t i = code & mask_;; i = (i + 1) & mask_) {
        const Slot& slot = slots_[i];
        if (slot.position < 0) return -1;
        if (slot.tag == tag && keys[slot.position] == text) return slot.position;
    }
}

}  // namespace tern

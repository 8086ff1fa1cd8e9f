// An open-addressing hash index from text to a position in a caller-owned list of strings. It stores only
// positions and hash tags (no copies of the strings), so building it for 150k tokens is a single allocation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tern {

class StringIndex {
public:
    StringIndex() = default;
    // Room for `count` entries at a load factor of at most one half.
    explicit StringIndex(size_t count);

    // Adds `keys[position]` unless an equal text is indexed already; returns the position that text maps to.
    int32_t insert(const std::vector<std::string>& keys, int32_t position);
    // The position of `text` in `keys`, or -1.
    int32_t find(const std::vector<std::string>& keys, std::string_view text) const;

private:
    struct Slot {
        int32_t position = -1;
        uint32_t tag = 0;  // the upper hash bits, to skip most string comparisons
    };
    static uint64_t hash(std::string_view text);

    std::vector<Slot> slots_;
    size_t mask_ = 0;
};

}  // namespace tern

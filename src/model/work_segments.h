// Several pieces of parallel work (matrices, experts' matrices) laid end to end as one range of work units, so
// that one parallel loop with one barrier runs them all and the threads' shares balance over the whole.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace tern {

// Calls fn(segment, part_begin, part_end) for each segment's part of units [begin, end), where num_segments
// segments of units_of(segment) units each lie end to end; part_begin and part_end count from the segment's start.
template <typename UnitsOf, typename Fn>
void for_each_segment_part(size_t num_segments, UnitsOf&& units_of, int64_t begin, int64_t end, Fn&& fn) {
    int64_t first_unit = 0;
    for (size_t segment = 0; segment < num_segments && first_unit < end; ++segment) {
        const int64_t units = units_of(segment);
        const int64_t part_begin = std::max(begin, first_unit) - first_unit;
        const int64_t part_end = std::min(end, first_unit + units) - first_unit;
        if (part_begin < part_end) fn(segment, part_begin, part_end);
        first_unit += units;
    }
}

}  // namespace tern

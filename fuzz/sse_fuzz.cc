// The SSE reader of tern bench and tern route reads streams from servers it does not control, in TCP pieces of any
// size. Property: the events do not depend on how the bytes were split. Input: a split seed byte, then the stream.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "api/sse.h"
#include "fuzz_util.h"

namespace {

bool same(const std::vector<tern::api::SseEvent>& left, const std::vector<tern::api::SseEvent>& right) {
    if (left.size() != right.size()) return false;
    for (size_t idx = 0; idx < left.size(); ++idx) {
        if (left[idx].event != right[idx].event || left[idx].data != right[idx].data || left[idx].id != right[idx].id) {
            return false;
        }
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    const uint32_t seed = data[0];
    const std::string_view stream(reinterpret_cast<const char*>(data + 1), size - 1);
    std::vector<tern::api::SseEvent> whole, pieces;
    tern::api::SseParser whole_parser, pieces_parser;
    whole_parser.feed(stream, &whole);
    whole_parser.finish(&whole);
    uint32_t state = seed * 2654435761u + 1;
    for (size_t offset = 0; offset < stream.size();) {
        state = state * 1103515245u + 12345u;
        const size_t length = std::min<size_t>(stream.size() - offset, 1 + (state >> 16) % 7);
        pieces_parser.feed(stream.substr(offset, length), &pieces);
        offset += length;
    }
    pieces_parser.finish(&pieces);
    TERN_FUZZ_CHECK(same(whole, pieces), "events depend on how the stream was split");
    return 0;
}

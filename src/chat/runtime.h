// What a render runs under: its options, the work budget that bounds its time and memory, and the arguments of a
// call with Python-style binding to parameter names.
#pragma once

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"
#include "chat/value.h"

namespace tern::chat::jinja {

inline constexpr uint64_t kWorkPerItem = 4;

struct RenderOptions {
    // The time strftime_now() formats (a broken-down local time); unset means the local time at the call.
    std::optional<std::tm> now;
    // The longest output, and the longest string a template may build on the way.
    size_t max_output_bytes = size_t{8} << 20;
    // Work units: kWorkPerItem for each loop iteration and each element of a list or dict built, plus bytes / 64 of
    // every string built and written. Bounds a render's time and memory, so that a hostile template (say, doubling
    // a list in a loop) fails within a second or two instead of running for hours; real chat templates use a few
    // thousand units per conversation.
    uint64_t max_work = 4'000'000;
    // Macro calls nested inside each other.
    int max_call_depth = 16;
};

// Not thread-safe: one per render.
class Budget {
public:
    explicit Budget(const RenderOptions& options) : options_(options) {}

    const RenderOptions& options() const { return options_; }
    // Charges `units` of work; fails with kResourceExhausted once the render has used up max_work.
    Status charge(uint64_t units);
    // Charges for `count` loop iterations or container elements.
    Status charge_items(uint64_t count) {
        return charge(count > UINT64_MAX / kWorkPerItem ? UINT64_MAX : count * kWorkPerItem);
    }
    // Charges for building a string of `bytes`, which must not exceed max_output_bytes.
    Status charge_string(size_t bytes);
    // Charges for walking each value whole (comparing, searching, serializing): see Value::weight().
    Status charge_walk(const Value& value) { return charge_items(value.weight()); }
    Status charge_walk(const Value& a, const Value& b) { return charge_items(std::min(a.weight(), b.weight())); }
    // str() and repr() of a value, charged as a string built; fail without building more than max_output_bytes.
    Result<std::string> str(const Value& value);
    Result<std::string> repr(const Value& value);

private:
    const RenderOptions& options_;
    uint64_t used_ = 0;
};

struct CallArgs {
    std::vector<Value> positional;
    std::vector<std::pair<std::string, Value>> keywords;
};

// Binds call arguments to named parameters the way Python does: positionals first, then keywords by name;
// parameters neither given nor defaulted are undefined. Fails on too many positionals, unknown keywords or a
// parameter given twice. `defaults` lines up with the last parameters.
Result<std::vector<Value>> bind_args(std::string_view function, const CallArgs& args,
                                     std::initializer_list<std::string_view> params,
                                     std::initializer_list<Value> defaults = {});

}  // namespace tern::chat::jinja

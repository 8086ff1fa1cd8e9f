// Wall-clock timing shared by the model_bench probes.
#pragma once

#include <chrono>

namespace tern {

// Seconds that fn() takes.
template <typename Fn>
double timed_seconds(Fn&& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace tern

// Spinning on a condition for a bounded time before blocking. The bound is in time, not in iterations: a PAUSE takes
// ~10 cycles on Zen and ~140 on Intel since Skylake, so 16,384 of them were ~0.1 ms on one machine and ~0.7 ms on the
// other (benchmarks/thread_pool_bench measures both here).
#pragma once

#include <chrono>
#include <thread>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tern {

inline void cpu_relax() {
#if defined(__x86_64__)
    _mm_pause();
#else
    std::this_thread::yield();
#endif
}

// Long enough to bridge the gap between a decode step's loops (a few microseconds), far shorter than a scheduler
// time slice: a spinning thread gives its core away soon after work stops coming.
inline constexpr std::chrono::microseconds kSpinBudget{50};

// Spins until `done()` holds or `budget` has passed; returns done(). The clock is read every 64 relaxes.
template <typename Done>
bool spin_until(Done&& done, std::chrono::nanoseconds budget = kSpinBudget) {
    const auto deadline = std::chrono::steady_clock::now() + budget;
    for (int spin = 1;; ++spin) {
        if (done()) return true;
        cpu_relax();
        if (spin % 64 == 0 && std::chrono::steady_clock::now() >= deadline) return done();
    }
}

}  // namespace tern

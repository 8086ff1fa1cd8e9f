#include "base/partial_files.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace tern {
namespace {

// A signal handler may only read memory that is fully written before it is published: each slot's path is copied
// in, then `used` is set (release); the handler reads `used` (acquire) and unlinks, which is async-signal-safe.
constexpr int kSlots = 16;
constexpr size_t kMaxPath = 4096;

struct Slot {
    std::atomic<bool> used{false};
    char path[kMaxPath] = {};
};

Slot g_slots[kSlots];
std::atomic<bool> g_claimed[kSlots];

void remove_and_reraise(int signal_number) {
    for (Slot& slot : g_slots) {
        if (slot.used.load(std::memory_order_acquire)) ::unlink(slot.path);
    }
    ::signal(signal_number, SIG_DFL);
    ::raise(signal_number);
}

}  // namespace

void remove_partial_files_on_signal() {
    struct sigaction action {};
    action.sa_handler = remove_and_reraise;
    sigemptyset(&action.sa_mask);
    ::sigaction(SIGINT, &action, nullptr);
    ::sigaction(SIGTERM, &action, nullptr);
}

PartialFile::PartialFile(std::string path) : path_(std::move(path)) {
    if (path_.size() >= kMaxPath) return;
    for (int idx = 0; idx < kSlots; ++idx) {
        bool expected = false;
        if (!g_claimed[idx].compare_exchange_strong(expected, true)) continue;
        std::memcpy(g_slots[idx].path, path_.c_str(), path_.size() + 1);
        g_slots[idx].used.store(true, std::memory_order_release);
        slot_ = idx;
        return;
    }
}

PartialFile::~PartialFile() {
    if (slot_ < 0) return;
    g_slots[slot_].used.store(false, std::memory_order_release);
    g_claimed[slot_].store(false);
}

}  // namespace tern

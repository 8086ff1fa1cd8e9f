// Identical requests at once go to a replica once: the first is relayed (the leader), the others (followers) wait
// for its complete answer and get it replayed, whole or as SSE. A follower whose leader failed or was cancelled (its
// client left) is relayed on its own, so that no client pays for another's failure. A cache hit is a follower whose
// answer is there already.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "http/exchange.h"
#include "route/response_cache.h"

namespace tern::route {

// An answer decided later: resolve() with a recording replays it; with null, `fallback` makes the answer (a relay
// of its own). Shared by the client's job and whoever decides (the leader of a merge, a two-tier judgement).
class DeferredAnswer {
public:
    explicit DeferredAnswer(std::function<std::unique_ptr<http::PendingAnswer>()> fallback)
        : fallback_(std::move(fallback)) {}

    void resolve(std::shared_ptr<const Recording> recording);

    http::Delivery delivery() const;
    void set_listener(const std::function<void()>& listener);
    bool poll(std::vector<std::string>& events);
    void client_gone();
    http::Answer whole_answer() const;
    http::Headers stream_headers() const;
    // The status the client got from a replay, or nullopt when the fallback answered (and reported itself).
    std::optional<int> delivered();
    void detach();

private:
    std::function<std::unique_ptr<http::PendingAnswer>()> fallback_;
    mutable std::mutex mutex_;
    std::function<void()> listener_;
    std::shared_ptr<const Recording> recording_;
    std::unique_ptr<http::PendingAnswer> own_;
    bool replayed_ = false;
    bool gone_ = false;
};

// The client's side of a deferred answer. `on_delivered` is called once a replay went out (not when the fallback
// answered: its own callback says so). `upstream`, if given, is work the decision waits on (a two-tier's small
// call): it lives as long as the job and is cancelled if the client leaves.
std::unique_ptr<http::PendingAnswer> deferred_job(std::shared_ptr<DeferredAnswer> answer,
                                                  std::function<void(int status)> on_delivered,
                                                  std::unique_ptr<http::PendingAnswer> upstream = nullptr);

// The leaders in flight, by cache key.
class MergedRequests {
public:
    // Makes the caller the leader of `key` (returns null), or returns a follower of the leader in flight. `fallback`
    // makes the follower's own relay, should the leader fail.
    // `on_delivered` is called once the follower's replayed answer went out (not when it fell back to its own relay,
    // whose own callback says so).
    std::unique_ptr<http::PendingAnswer> follow_or_lead(const std::string& key,
                                                        std::function<std::unique_ptr<http::PendingAnswer>()> fallback,
                                                        std::function<void(int status)> on_delivered);
    // The leader of `key` finished: its followers get `recording`, or (null: it failed) relay on their own.
    void finish(const std::string& key, std::shared_ptr<const Recording> recording);

private:
    struct Waiting;
    std::mutex mutex_;
    std::map<std::string, std::shared_ptr<Waiting>> leaders_;
};

// An answer that is replayed from a recording, or (fallback) relayed after all.
std::unique_ptr<http::PendingAnswer> replay(std::shared_ptr<const Recording> recording,
                                            std::function<void(int status)> on_delivered = nullptr);

}  // namespace tern::route

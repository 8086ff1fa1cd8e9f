#include "route/merged_requests.h"

#include <optional>

namespace tern::route {

void DeferredAnswer::resolve(std::shared_ptr<const Recording> recording) {
    std::function<void()> listener;
    {
        std::lock_guard lock(mutex_);
        if (gone_ || recording_ || own_) return;
        if (recording) {
            recording_ = std::move(recording);
        } else {
            own_ = fallback_();
            if (listener_) own_->set_listener(listener_);
        }
        listener = listener_;
    }
    if (listener) listener();
}

http::Delivery DeferredAnswer::delivery() const {
    std::lock_guard lock(mutex_);
    if (own_) return own_->delivery();
    if (!recording_) return http::Delivery::kUndecided;
    return recording_->streamed ? http::Delivery::kStream : http::Delivery::kWhole;
}

void DeferredAnswer::set_listener(const std::function<void()>& listener) {
    std::lock_guard lock(mutex_);
    listener_ = listener;
    if (own_) own_->set_listener(listener);
}

bool DeferredAnswer::poll(std::vector<std::string>& events) {
    std::lock_guard lock(mutex_);
    if (own_) return own_->poll(events);
    if (!recording_) return gone_;
    if (!replayed_ && recording_->streamed) events.insert(events.end(), recording_->events.begin(), recording_->events.end());
    replayed_ = true;
    return true;
}

void DeferredAnswer::client_gone() {
    std::lock_guard lock(mutex_);
    gone_ = true;
    if (own_) own_->client_gone();
}

http::Answer DeferredAnswer::whole_answer() const {
    std::lock_guard lock(mutex_);
    if (own_) return own_->whole_answer();
    if (!recording_) return http::error_answer(499, "the client closed the connection");
    return http::Answer{recording_->status, recording_->content_type, recording_->body, {}};
}

http::Headers DeferredAnswer::stream_headers() const {
    std::lock_guard lock(mutex_);
    return own_ ? own_->stream_headers() : http::Headers{};
}

std::optional<int> DeferredAnswer::delivered() {
    std::unique_ptr<http::PendingAnswer> own;
    int status = 499;
    {
        std::lock_guard lock(mutex_);
        listener_ = nullptr;
        own = std::move(own_);
        if (recording_ && !gone_) status = recording_->status;
    }
    if (!own) return status;
    own->delivered();
    return std::nullopt;
}

void DeferredAnswer::detach() {
    std::lock_guard lock(mutex_);
    listener_ = nullptr;
    if (own_) own_->set_listener(nullptr);
}

namespace {

class FollowerJob final : public http::PendingAnswer {
public:
    FollowerJob(std::shared_ptr<DeferredAnswer> state, std::function<void(int status)> on_delivered,
                std::unique_ptr<http::PendingAnswer> upstream)
        : state_(std::move(state)), on_delivered_(std::move(on_delivered)), upstream_(std::move(upstream)) {}
    ~FollowerJob() override { state_->detach(); }

    http::Delivery delivery() const override { return state_->delivery(); }
    void set_listener(const std::function<void()>& listener) override { state_->set_listener(listener); }
    bool poll(std::vector<std::string>& events) override { return state_->poll(events); }
    void client_gone() override {
        state_->client_gone();
        if (upstream_) upstream_->client_gone();
    }
    http::Answer whole_answer() const override { return state_->whole_answer(); }
    http::Headers stream_headers() const override { return state_->stream_headers(); }
    void delivered() override {
        const std::optional<int> replayed = state_->delivered();
        if (replayed && on_delivered_) on_delivered_(*replayed);
    }

private:
    std::shared_ptr<DeferredAnswer> state_;
    std::function<void(int status)> on_delivered_;
    std::unique_ptr<http::PendingAnswer> upstream_;
};

}  // namespace

std::unique_ptr<http::PendingAnswer> deferred_job(std::shared_ptr<DeferredAnswer> answer,
                                                  std::function<void(int status)> on_delivered,
                                                  std::unique_ptr<http::PendingAnswer> upstream) {
    return std::make_unique<FollowerJob>(std::move(answer), std::move(on_delivered), std::move(upstream));
}

struct MergedRequests::Waiting {
    std::vector<std::shared_ptr<DeferredAnswer>> followers;
};

std::unique_ptr<http::PendingAnswer> MergedRequests::follow_or_lead(
    const std::string& key, std::function<std::unique_ptr<http::PendingAnswer>()> fallback,
    std::function<void(int status)> on_delivered) {
    std::lock_guard lock(mutex_);
    auto [entry, leading] = leaders_.try_emplace(key, nullptr);
    if (leading) {
        entry->second = std::make_shared<Waiting>();
        return nullptr;
    }
    auto state = std::make_shared<DeferredAnswer>(std::move(fallback));
    entry->second->followers.push_back(state);
    return deferred_job(std::move(state), std::move(on_delivered));
}

void MergedRequests::finish(const std::string& key, std::shared_ptr<const Recording> recording) {
    std::shared_ptr<Waiting> waiting;
    {
        std::lock_guard lock(mutex_);
        auto found = leaders_.find(key);
        if (found == leaders_.end()) return;
        waiting = std::move(found->second);
        leaders_.erase(found);
    }
    for (const auto& follower : waiting->followers) follower->resolve(recording);
}

std::unique_ptr<http::PendingAnswer> replay(std::shared_ptr<const Recording> recording,
                                            std::function<void(int status)> on_delivered) {
    auto state = std::make_shared<DeferredAnswer>(nullptr);
    state->resolve(std::move(recording));
    return deferred_job(std::move(state), std::move(on_delivered));
}

}  // namespace tern::route

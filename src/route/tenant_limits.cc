#include "route/tenant_limits.h"

#include <fmt/format.h>

#include <algorithm>

namespace tern::route {

TokenBucket::TokenBucket(double per_minute)
    : rate_per_second_(per_minute / 60.0), capacity_(std::max(1.0, per_minute / 60.0)), level_(capacity_) {}

void TokenBucket::refill(Clock::time_point now) {
    if (!updated_) updated_ = now;
    const double seconds = std::chrono::duration<double>(now - *updated_).count();
    if (seconds <= 0) return;
    level_ = std::min(capacity_, level_ + seconds * rate_per_second_);
    updated_ = now;
}

std::optional<double> TokenBucket::try_take(double amount, Clock::time_point now) {
    refill(now);
    const double needed = std::min(amount, capacity_);
    if (level_ >= needed) {
        level_ -= amount;
        return std::nullopt;
    }
    return (needed - level_) / rate_per_second_;
}

void TokenBucket::adjust(double amount, Clock::time_point now) {
    refill(now);
    level_ = std::min(capacity_, level_ + amount);
}

double TokenBucket::level(Clock::time_point now) {
    refill(now);
    return level_;
}

TenantLimits::TenantLimits(const std::vector<TenantConfig>& tenants) {
    for (const TenantConfig& tenant : tenants) {
        auto state = std::make_unique<State>();
        state->config = &tenant;
        if (tenant.requests_per_minute > 0) state->requests.emplace(tenant.requests_per_minute);
        if (tenant.tokens_per_minute > 0) state->tokens.emplace(tenant.tokens_per_minute);
        states_.push_back(std::move(state));
    }
}

Admission TenantLimits::admit(size_t tenant, double estimated_tokens, Clock::time_point now) {
    State& state = *states_.at(tenant);
    std::lock_guard lock(state.mutex);
    const TenantConfig& config = *state.config;
    Admission admission;
    admission.status = 429;
    if (config.max_concurrency > 0 && state.in_flight >= config.max_concurrency) {
        admission.message = fmt::format("tenant '{}' has {} requests in flight, its limit", config.name, state.in_flight);
        admission.retry_after_s = 1;
        return admission;
    }
    if (state.requests) {
        if (auto wait = state.requests->try_take(1, now)) {
            admission.message = fmt::format("tenant '{}' is over its {} requests per minute", config.name,
                                            config.requests_per_minute);
            admission.retry_after_s = *wait;
            return admission;
        }
    }
    if (state.tokens) {
        if (auto wait = state.tokens->try_take(estimated_tokens, now)) {
            if (state.requests) state.requests->adjust(1, now);  // the request was not admitted after all
            admission.message = fmt::format("tenant '{}' is over its {} tokens per minute", config.name,
                                            config.tokens_per_minute);
            admission.retry_after_s = *wait;
            return admission;
        }
    }
    ++state.in_flight;
    return Admission{.admitted = true, .status = 200, .reserved_tokens = estimated_tokens};
}

void TenantLimits::finish(size_t tenant, const Admission& admission, double used_tokens, Clock::time_point now) {
    State& state = *states_.at(tenant);
    std::lock_guard lock(state.mutex);
    --state.in_flight;
    if (state.tokens && used_tokens >= 0) state.tokens->adjust(admission.reserved_tokens - used_tokens, now);
}

}  // namespace tern::route

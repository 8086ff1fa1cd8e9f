#include "route/routing.h"

#include <fmt/format.h>

#include <algorithm>
#include <xxhash.h>

#include "route/balancer.h"

namespace tern::route {

Pool::Pool(PoolConfig config, int eject_after_failures) : config_(std::move(config)) {
    for (const net::BaseUrl& url : config_.backends) replicas_.push_back(std::make_shared<Replica>(url, eject_after_failures));
}

std::shared_ptr<Replica> Pool::pick(std::string_view affinity_key, const std::vector<const Replica*>& tried) {
    std::vector<ReplicaView> views;
    views.reserve(replicas_.size());
    for (const auto& replica : replicas_) {
        ReplicaView view = replica->view();
        view.excluded = std::find(tried.begin(), tried.end(), replica.get()) != tried.end();
        views.push_back(view);
    }
    const std::optional<size_t> chosen = pick_replica(views, config_.policy, affinity_key, round_robin_.fetch_add(1));
    return chosen ? replicas_[*chosen] : nullptr;
}

const ModelVersion& pick_version(const ModelRoute& model, std::string_view sticky_key) {
    double total = 0;
    for (const ModelVersion& version : model.versions) total += version.weight;
    // A uniform point in [0, total) from the key: 53 bits of its hash, salted by the model so that one key's
    // versions of different models are independent.
    const uint64_t hash = XXH3_64bits_withSeed(sticky_key.data(), sticky_key.size(),
                                               XXH3_64bits(model.name.data(), model.name.size()));
    const double point = static_cast<double>(hash >> 11) / static_cast<double>(uint64_t{1} << 53) * total;
    double edge = 0;
    for (const ModelVersion& version : model.versions) {
        edge += version.weight;
        if (point < edge && version.weight > 0) return version;
    }
    for (auto it = model.versions.rbegin(); it != model.versions.rend(); ++it) {
        if (it->weight > 0) return *it;  // rounding at the top end
    }
    return model.versions.front();
}

int64_t estimate_tokens(size_t text_bytes) { return static_cast<int64_t>((text_bytes + 3) / 4); }

Routing::Routing(RouteConfig config)
    : config_(std::move(config)), limits_(config_.tenants), cache_(config_.cache) {
    std::vector<Prober::Target> targets;
    for (const PoolConfig& pool_config : config_.pools) {
        auto pool = std::make_unique<Pool>(pool_config, config_.health.eject_after_failures);
        for (const auto& replica : pool->replicas()) {
            targets.push_back({replica, pool_config.policy == BalancePolicy::kLoadAware});
        }
        pools_.emplace(pool_config.name, std::move(pool));
    }
    prober_ = std::make_unique<Prober>(std::move(targets), config_.health);
    for (const ModelRoute& model : config_.models) {
        std::vector<double>& weights = weights_[model.name];
        for (const ModelVersion& version : model.versions) weights.push_back(version.weight);
    }
}

Status Routing::set_weights(const std::string& model_name, const std::map<std::string, double>& weights) const {
    const ModelRoute* model = config_.find_model(model_name);
    if (model == nullptr) return not_found(fmt::format("no model is named '{}'", model_name));
    std::vector<double> updated;
    double total = 0;
    for (const ModelVersion& version : model->versions) {
        auto found = weights.find(version.name);
        if (found == weights.end()) {
            return invalid_argument(fmt::format("give a weight for every version of '{}'; '{}' is missing", model_name,
                                                version.name));
        }
        if (!(found->second >= 0 && found->second <= 1e9)) {
            return invalid_argument(fmt::format("the weight of '{}' must be 0 or more", version.name));
        }
        updated.push_back(found->second);
        total += found->second;
    }
    if (weights.size() != model->versions.size()) {
        return invalid_argument(fmt::format("'{}' has {} versions; a weight names one that does not exist", model_name,
                                            model->versions.size()));
    }
    if (total <= 0) return invalid_argument("the weights must not all be 0");
    std::lock_guard lock(weights_mutex_);
    weights_[model_name] = std::move(updated);
    return Status::ok();
}

std::vector<ModelVersion> Routing::versions(const ModelRoute& model) const {
    std::vector<ModelVersion> versions = model.versions;
    std::lock_guard lock(weights_mutex_);
    const std::vector<double>& weights = weights_.at(model.name);
    for (size_t idx = 0; idx < versions.size(); ++idx) versions[idx].weight = weights[idx];
    return versions;
}

Pool* Routing::pool(std::string_view name) const {
    auto found = pools_.find(name);
    return found == pools_.end() ? nullptr : found->second.get();
}

RouteDecision Routing::decide(const ModelRoute& model, const http::Request& request, std::string_view sticky_key,
                              int64_t prompt_tokens) const {
    for (const HeaderRule& rule : config_.header_rules) {
        if (request.header(rule.header) == rule.equals) return {pool(rule.pool), "", "header"};
    }
    if (!model.long_context_pool.empty() && prompt_tokens > model.long_context_over_tokens) {
        return {pool(model.long_context_pool), "", "long_context"};
    }
    if (model.versions.size() == 1) return {pool(model.versions.front().pool), model.versions.front().name, "model"};
    ModelRoute current = model;
    current.versions = versions(model);
    const ModelVersion& version = pick_version(current, sticky_key);
    return {pool(version.pool), version.name, "canary"};
}

bool Routing::any_healthy() const {
    for (const auto& [name, pool] : pools_) {
        for (const auto& replica : pool->replicas()) {
            if (replica->healthy()) return true;
        }
    }
    return false;
}

std::vector<std::shared_ptr<Replica>> Routing::all_replicas() const {
    std::vector<std::shared_ptr<Replica>> replicas;
    for (const auto& [name, pool] : pools_) replicas.insert(replicas.end(), pool->replicas().begin(), pool->replicas().end());
    return replicas;
}

}  // namespace tern::route

// Reading the Prometheus text exposition format 0.0.4 (what a server's /metrics returns): the samples, name and
// value, label sets aside. Comments and malformed lines are skipped. tern bench reads histograms with it, tern route
// the queue depth and KV use of its replicas.
#pragma once

#include <functional>
#include <string_view>

namespace tern::metrics {

// Calls `visit(name, value)` for every sample line ("name{labels} value [timestamp]"), in order.
void for_each_sample(std::string_view text, const std::function<void(std::string_view name, double value)>& visit);

}  // namespace tern::metrics

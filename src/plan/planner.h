// tern plan: capacity and cost of serving a model on given hardware for a given workload. It picks the model
// layout (tensor / pipeline parallel degree), the concurrency per replica, the number of devices at the peak and
// the cost per token, and compares variants (weight type, KV type, headroom). Arithmetic only: thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "plan/device.h"
#include "plan/kv_capacity.h"
#include "plan/model_shape.h"
#include "plan/perf_model.h"
#include "plan/profile.h"
#include "plan/weight_footprint.h"
#include "plan/workload.h"

namespace tern::plan {

struct PlanOptions {
    ModelShape model;
    std::optional<DType> weight_type;     // nullopt: a GGUF's own tensor bytes, else f16
    std::optional<int64_t> weight_bytes;  // a given weight size in bytes; overrides the computed one
    DType kv_type = DType::kF16;
    DeviceSpec device;
    int64_t num_devices = 0;                 // devices available; 0: as many as the peak needs
    int64_t tensor_parallel = 0;             // 0: chosen by the planner
    int64_t pipeline_parallel = 0;           // 0: chosen by the planner
    double headroom = 0.2;                   // share of the KV budget kept free (see kv_capacity.h)
    std::optional<int64_t> kv_budget_bytes;  // KV memory per replica given outright (replaces the budget formula)
    int64_t context_length = 0;              // longest request in tokens; 0: the model's context length
    int64_t block_size = kDefaultBlockSize;  // tokens per KV block
    int64_t batch_tokens = 512;              // tokens per forward pass (sizes the workspace and prefill chunks)
    Workload workload;
    std::vector<ProfilePoint> profile;  // measured results to calibrate the throughput model with
    double device_hour_cost = 0;        // price of one device for one hour; 0: no cost figures
    bool what_if = true;                // also compute the what-if table
};

// KV need and capacity at one request length.
struct LengthRow {
    std::string label;  // "mean", "P50", "P95", "P99", "context"
    int64_t tokens = 0;
    int64_t kv_bytes = 0;
    int64_t blocks = 0;
    int64_t max_concurrent = 0;
    int64_t recommended_concurrent = 0;
};

struct ThroughputPlan {
    Efficiency efficiency;
    std::string efficiency_source;  // "device preset", "given", or the calibration method
    std::optional<Calibration> calibration;
    bool int8_compute = false;     // quantized weights: matrix products on the int8 units
    double replica_bandwidth = 0;  // bytes/s over the replica's devices
    double replica_peak_ops = 0;
    int64_t concurrency = 0;  // planned requests per replica
    std::string bound;        // what limits the concurrency
    bool slo_met = true;
    PerfPoint planned;      // at `concurrency` and the mean lengths
    double ttft_p95_s = 0;  // TTFT of a P95 / P99 prompt at `concurrency`
    double ttft_p99_s = 0;
    std::vector<PerfPoint> table;  // 1, 2, 4, ... up to the memory limit
};

struct DeviceCount {
    int64_t replicas = 1;
    int64_t devices_needed = 0;          // replicas x devices per replica (0 when the model does not fit)
    int64_t devices_by_memory = 0;       // enough KV for the requests in flight at the peak
    int64_t devices_by_throughput = 0;   // enough tokens/s at the planned concurrency
    double concurrent_at_peak = 0;       // peak rate x time in system (Little's law)
    double capacity_requests_per_s = 0;  // what the available devices (--devices) serve; 0 when not given
};

struct WhatIfRow {
    DType weight_type = DType::kF16;
    DType kv_type = DType::kF16;
    double headroom = 0;
    bool fits = false;
    int64_t tensor_parallel = 1;
    int64_t pipeline_parallel = 1;
    int64_t weight_bytes = 0;
    int64_t kv_bytes_per_request = 0;
    int64_t max_concurrent = 0;
    int64_t recommended_concurrent = 0;
    std::optional<double> output_tokens_per_s;  // per replica at its planned concurrency
    int64_t devices_needed = 0;
    std::optional<double> cost_per_million_output_tokens;
};

struct Plan {
    PlanOptions options;  // as given, with the workload defaults filled in
    WeightFootprint weights;
    std::string weight_source;       // "shapes", "GGUF tensors" or "given"
    int64_t context_length = 0;      // 0: unknown (requests are not capped)
    int64_t kv_bytes_per_token = 0;  // one model copy
    int64_t workspace_bytes = 0;     // one device at tensor_parallel 1
    std::string planning_label;      // which request length sizes the plan
    int64_t planning_tokens = 0;
    int64_t kv_bytes_per_request = 0;  // planning_tokens x kv_bytes_per_token
    std::vector<LengthRow> lengths;
    ReplicaMemory memory;  // the chosen layout
    bool fits = false;
    std::string parallel_advice;
    std::optional<ThroughputPlan> throughput;  // absent when the device's bandwidth or peak is unknown
    DeviceCount devices;
    std::optional<double> cost_per_million_output_tokens;  // at full use of the planned concurrency
    std::optional<double> cost_per_million_at_peak;        // devices_needed running while the peak lasts
    std::vector<WhatIfRow> what_if;
    std::vector<std::string> warnings;
};

Result<Plan> make_plan(const PlanOptions& options);

}  // namespace tern::plan

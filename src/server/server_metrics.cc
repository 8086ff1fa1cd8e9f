#include "server/server_metrics.h"

#include <unistd.h>

#include <fstream>

namespace tern::server {
namespace {

// vLLM's bucket bounds, in seconds.
const std::vector<double> kTtftBounds = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0,
                                         2.5,   5.0,   7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTokenGapBounds = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                             0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kRequestBounds = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,  15.0, 20.0,
                                            30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

double resident_bytes() {
    std::ifstream statm("/proc/self/statm");
    long pages_total = 0, pages_resident = 0;
    statm >> pages_total >> pages_resident;
    return static_cast<double>(pages_resident) * static_cast<double>(sysconf(_SC_PAGESIZE));
}

}  // namespace

Result<std::unique_ptr<ServerMetrics>> ServerMetrics::create(int64_t weight_bytes, int64_t kv_bytes) {
    std::unique_ptr<ServerMetrics> server_metrics(new ServerMetrics());
    TERN_RETURN_IF_ERROR(server_metrics->register_all(weight_bytes, kv_bytes));
    return server_metrics;
}

Status ServerMetrics::register_all(int64_t weight_bytes, int64_t kv_bytes) {
    auto& r = registry_;
    TERN_ASSIGN_OR_RETURN(ttft_, r.add_histogram("tern:time_to_first_token_seconds", "Time to first token", kTtftBounds));
    TERN_ASSIGN_OR_RETURN(inter_token_, r.add_histogram("tern:inter_token_latency_seconds", "Gaps between output "
                                                        "tokens", kTokenGapBounds));
    TERN_ASSIGN_OR_RETURN(time_per_output_token_, r.add_histogram("tern:request_time_per_output_token_seconds",
                                                                  "Mean gap between a request's output tokens",
                                                                  kTokenGapBounds));
    TERN_ASSIGN_OR_RETURN(e2e_, r.add_histogram("tern:e2e_request_latency_seconds", "Arrival to finish", kRequestBounds));
    TERN_ASSIGN_OR_RETURN(queue_time_, r.add_histogram("tern:request_queue_time_seconds", "Arrival to first scheduled",
                                                       kRequestBounds));
    TERN_ASSIGN_OR_RETURN(success_, r.add_counter("tern:request_success_total", "Finished requests",
                                                  {"finished_reason"}));
    TERN_ASSIGN_OR_RETURN(prompt_tokens_, r.add_counter("tern:prompt_tokens_total", "Prompt tokens of finished requests"));
    TERN_ASSIGN_OR_RETURN(generation_tokens_, r.add_counter("tern:generation_tokens_total", "Generated tokens"));
    TERN_ASSIGN_OR_RETURN(prefix_queries_, r.add_counter("tern:prefix_cache_queries_total", "Prompt tokens looked up "
                                                         "in the prefix cache"));
    TERN_ASSIGN_OR_RETURN(prefix_hits_, r.add_counter("tern:prefix_cache_hits_total", "Prompt tokens found in the "
                                                      "prefix cache"));
    TERN_ASSIGN_OR_RETURN(preemptions_, r.add_counter("tern:num_preemptions_total", "Requests preempted"));
    // Speculative decoding, as vLLM's spec_decode counters: acceptance rate = accepted / draft tokens, mean accepted
    // length = 1 + accepted / drafts.
    TERN_ASSIGN_OR_RETURN(spec_drafts_, r.add_counter("tern:spec_decode_num_drafts_total",
                                                      "Draft sequences verified (one per request and step)"));
    TERN_ASSIGN_OR_RETURN(spec_draft_tokens_, r.add_counter("tern:spec_decode_num_draft_tokens_total",
                                                            "Draft tokens verified"));
    TERN_ASSIGN_OR_RETURN(spec_accepted_tokens_, r.add_counter("tern:spec_decode_num_accepted_tokens_total",
                                                               "Draft tokens accepted"));
    TERN_ASSIGN_OR_RETURN(running_, r.add_gauge("tern:num_requests_running", "Requests in the running batch"));
    TERN_ASSIGN_OR_RETURN(waiting_, r.add_gauge("tern:num_requests_waiting", "Requests waiting to be scheduled"));
    TERN_ASSIGN_OR_RETURN(kv_usage_, r.add_gauge("tern:kv_cache_usage_perc", "Fraction of KV blocks in use (1 = all)"));
    TERN_ASSIGN_OR_RETURN(memory_, r.add_gauge("tern:memory_bytes", "Process memory by kind", {"kind"}));
    // Every answered request, refusals included (the finished-request counter above sees only what ran): the
    // error-rate alert of deploy/prometheus divides its 5xx by all.
    TERN_ASSIGN_OR_RETURN(responses_, r.add_counter("tern:http_responses_total", "Answered API requests by endpoint "
                                                    "and HTTP status", {"endpoint", "status"}));
    memory_->with_labels({"weights"}).set(static_cast<double>(weight_bytes));
    memory_->with_labels({"kv_cache"}).set(static_cast<double>(kv_bytes));
    memory_->set_callback({"resident"}, resident_bytes);
    for (const char* reason : {"stop", "length", "abort"}) success_->with_labels({reason});
    return Status::ok();
}

void ServerMetrics::attach(const serving::AsyncEngine& engine) {
    running_->set_callback({}, [&engine] { return static_cast<double>(engine.stats().engine.num_running); });
    waiting_->set_callback({}, [&engine] {
        const auto stats = engine.stats();
        return static_cast<double>(stats.engine.num_waiting + stats.num_inbox);
    });
    kv_usage_->set_callback({}, [&engine] { return engine.stats().engine.kv_usage; });
}

void ServerMetrics::on_response(const std::string& endpoint, int status) {
    responses_->with_labels({endpoint, std::to_string(status)}).inc();
}

void ServerMetrics::on_finish(const engine::RequestOutput& output) {
    success_->with_labels({std::string(scheduler::finish_reason_name(*output.finish_reason))}).inc();
    if (!output.timings) return;
    const engine::RequestTimings& timings = *output.timings;
    if (timings.ttft_seconds() >= 0) ttft_->get().observe(timings.ttft_seconds());
    auto& inter_token = inter_token_->get();  // one lookup per request, not one per token
    for (double gap : timings.inter_token_seconds()) inter_token.observe(gap);
    if (timings.token_times.size() > 1) time_per_output_token_->get().observe(timings.tpot_seconds());
    e2e_->get().observe(timings.e2e_seconds());
    if (timings.scheduled()) queue_time_->get().observe(timings.queue_seconds());
    prompt_tokens_->get().inc(timings.num_prompt_tokens);
}

void ServerMetrics::on_step(const engine::EngineStats& stats) {
    generation_tokens_->get().inc(static_cast<double>(stats.num_generated_tokens - last_stats_.num_generated_tokens));
    prefix_queries_->get().inc(static_cast<double>(stats.prefix_cache.num_queried_tokens -
                                                   last_stats_.prefix_cache.num_queried_tokens));
    prefix_hits_->get().inc(static_cast<double>(stats.prefix_cache.num_hit_tokens -
                                                last_stats_.prefix_cache.num_hit_tokens));
    preemptions_->get().inc(static_cast<double>(stats.num_preemptions - last_stats_.num_preemptions));
    spec_drafts_->get().inc(static_cast<double>(stats.num_drafts - last_stats_.num_drafts));
    spec_draft_tokens_->get().inc(static_cast<double>(stats.num_draft_tokens - last_stats_.num_draft_tokens));
    spec_accepted_tokens_->get().inc(
        static_cast<double>(stats.num_accepted_draft_tokens - last_stats_.num_accepted_draft_tokens));
    last_stats_ = stats;
}

}  // namespace tern::server

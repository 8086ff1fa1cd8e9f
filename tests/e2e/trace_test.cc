// Step traces end to end: `tern bench engine --trace` on a mixed workload (ragged prompts, a shared prefix, chunked
// prefill, a late long prompt, preemptions from a small KV cache) writes Chrome trace JSON that ajv accepts against
// the format's schema and whose events hold together; `tern serve`'s /debug/trace answers only to the admin key.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "run_command.h"
#include "serve_process.h"

namespace tern::testing {
namespace {

using nlohmann::json;

// ajv (tests/e2e/node) against tests/trace/chrome_trace.schema.json.
void expect_schema_valid(const std::string& trace_text, const std::string& name) {
    const std::string lines = temp_dir() + "/" + name + ".jsonl";
    const json schema = json::parse(read_file(TERN_TRACE_SCHEMA));
    std::ofstream(lines) << json{{"id", name}, {"schema", schema}, {"output", trace_text}}.dump() << "\n";
    const CommandResult result = run_command("'" + std::string(TERN_NODE) + "' '" + TERN_NODE_DIR +
                                             "/validate_schemas.mjs' '" + lines + "'");
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    std::filesystem::remove(lines);
}

// Complete events of one thread nest: each starts and ends inside the one open around it.
void expect_spans_nest(const json& events) {
    std::map<int64_t, std::vector<std::pair<double, double>>> open;  // tid -> stack of [start, end]
    for (const json& event : events) {
        if (event["ph"] != "X") continue;
        auto& stack = open[event["tid"].get<int64_t>()];
        const double start = event["ts"], end = start + event["dur"].get<double>();
        while (!stack.empty() && stack.back().second <= start + 1e-3) stack.pop_back();
        if (!stack.empty()) {
            ASSERT_LE(end, stack.back().second + 1e-3) << event.dump() << " overlaps the span around it";
        }
        stack.emplace_back(start, end);
    }
}

// Each step holds schedule, forward, sample and update; each forward an embed, `layers` attention and ffn spans and
// an output.
void expect_step_structure(const json& events, int layers) {
    std::vector<const json*> steps;
    for (const json& event : events) {
        if (event["ph"] == "X" && event["name"] == "step") steps.push_back(&event);
    }
    ASSERT_FALSE(steps.empty());
    for (const json* step : steps) {
        const double start = (*step)["ts"], end = start + (*step)["dur"].get<double>();
        std::map<std::string, int> inside;
        for (const json& event : events) {
            if (event["ph"] != "X" || event["tid"] != (*step)["tid"] || &event == step) continue;
            const double ts = event["ts"];
            if (ts >= start && ts <= end) ++inside[event["name"]];
        }
        for (const char* part : {"schedule", "forward", "sample", "update", "embed", "output"}) {
            EXPECT_EQ(inside[part], 1) << part << " in " << step->dump();
        }
        EXPECT_EQ(inside["attention"], layers) << step->dump();
        EXPECT_EQ(inside["ffn"], layers) << step->dump();
    }
}

struct RequestTrack {
    std::multiset<std::string> begun, ended;
    int64_t prompt_tokens = 0, cached_tokens = 0, chunk_tokens = 0, chunks = 0;
    int64_t output_tokens = -1, preemptions = 0;
};

std::map<std::string, RequestTrack> request_tracks(const json& events) {
    std::map<std::string, RequestTrack> tracks;
    for (const json& event : events) {
        if (event.value("cat", "") != "request") continue;
        RequestTrack& track = tracks[event["id"]];
        const std::string name = event["name"];
        if (event["ph"] == "b") {
            EXPECT_EQ(track.ended.count(name), track.begun.count(name)) << "nested twice: " << event.dump();
            track.begun.insert(name);
        }
        if (event["ph"] == "e") {
            track.ended.insert(name);
            EXPECT_EQ(track.ended.count(name), track.begun.count(name)) << "ends before it begins: " << event.dump();
        }
        const json& args = event["args"];
        if (name == "prefill" && event["ph"] == "b") {
            track.prompt_tokens = args["prompt_tokens"];
            track.cached_tokens = args["cached_tokens"];
        }
        if (name == "prefill chunk" && event["ph"] == "b") {
            track.chunk_tokens += args["tokens"].get<int64_t>();
            ++track.chunks;
        }
        if (name == "finish") {
            track.output_tokens = args["output_tokens"];
            track.preemptions = args["preemptions"];
        }
    }
    return tracks;
}

TEST(Trace, AMixedWorkloadGivesValidChromeTraceJson) {
    const std::string path = temp_dir() + "/mixed-trace-" + std::to_string(::getpid()) + ".json";
    // 25 blocks of 16 tokens for 12 requests at once: preemptions; a 64-token budget: chunked prefill.
    const CommandResult run = run_tern("bench engine -m " + tiny_model_path() +
                                       " --num-prompts 24 --input-len 96 --range-ratio 0.5 --output-len 24"
                                       " --prefix-len 16 --max-concurrency 12 --max-batched-tokens 64"
                                       " --kv-cache-mem 0.0004 --late-prompt-len 200 --late-prompt-after 0.02"
                                       " --trace " + path);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const std::string text = read_file(path);
    expect_schema_valid(text, "mixed-trace");
    const json trace = json::parse(text);
    const json& events = trace["traceEvents"];
    EXPECT_EQ(trace["otherData"]["dropped_events"], 0);
    expect_spans_nest(events);
    expect_step_structure(events, 4);  // the tiny preset's layers
    const auto tracks = request_tracks(events);
    int finished = 0, chunked = 0, preempted = 0;
    for (const auto& [id, track] : tracks) {
        SCOPED_TRACE(id);
        EXPECT_EQ(track.begun, track.ended);
        EXPECT_EQ(track.begun.count("queued"), 1u);
        EXPECT_EQ(track.begun.count("prefill"), 1u);
        EXPECT_EQ(track.begun.count("decode"), track.output_tokens > 0 ? 1u : 0u);
        // A preempted request computes its prompt again: at least the uncached part, once.
        EXPECT_GE(track.chunk_tokens, track.prompt_tokens - track.cached_tokens);
        finished += track.output_tokens >= 0 ? 1 : 0;
        chunked += track.chunks > 1 ? 1 : 0;
        preempted += track.preemptions > 0 ? 1 : 0;
    }
    EXPECT_EQ(finished, 26);  // 24 + the late prompt + the warm-up request
    EXPECT_GT(chunked, 0) << "the workload must split some prompts";
    EXPECT_GT(preempted, 0) << "the workload must preempt some requests";
    std::filesystem::remove(path);
}

TEST(Trace, DebugTraceAnswersOnlyTheAdminKey) {
    {
        ServeProcess server;
        ASSERT_EQ(server.start({"-m", tiny_model_path()}), "");
        EXPECT_EQ(http_get(server.port(), "/debug/trace?seconds=1").status, 404) << "off without an admin key";
    }
    ServeProcess server;
    ASSERT_EQ(server.start({"-m", tiny_model_path(), "--admin-key", "adm", "--api-key", "user"}), "");
    const HeaderList admin = {{"Authorization", "Bearer adm"}};
    EXPECT_EQ(http_get(server.port(), "/debug/trace?seconds=1").status, 401);
    EXPECT_EQ(http_get(server.port(), "/debug/trace?seconds=1", {{"Authorization", "Bearer user"}}).status, 401);
    EXPECT_EQ(http_get(server.port(), "/debug/trace?seconds=0", admin).status, 400);
    EXPECT_EQ(http_get(server.port(), "/debug/trace?seconds=61", admin).status, 400);
    HttpReply capture;
    std::thread capturing([&] { capture = http_get(server.port(), "/debug/trace?seconds=1.5", admin); });
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    EXPECT_EQ(http_get(server.port(), "/debug/trace?seconds=1", admin).status, 409) << "one capture at a time";
    const HttpReply completion = http_post(server.port(), "/v1/completions",
                                           R"({"prompt": "Once upon a time", "max_tokens": 12})",
                                           {{"Authorization", "Bearer user"}});
    EXPECT_EQ(completion.status, 200) << completion.body;
    capturing.join();
    ASSERT_EQ(capture.status, 200) << capture.body;
    expect_schema_valid(capture.body, "debug-trace");
    const json events = json::parse(capture.body)["traceEvents"];
    expect_spans_nest(events);
    const auto tracks = request_tracks(events);
    ASSERT_EQ(tracks.size(), 1u) << "the completion's track";
    EXPECT_EQ(tracks.begin()->second.output_tokens, 12);
    int detokenized = 0;
    for (const json& event : events) detokenized += event["name"] == "detokenize" ? 1 : 0;
    EXPECT_EQ(detokenized, 12);
}

}  // namespace
}  // namespace tern::testing

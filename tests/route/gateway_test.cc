// tern route's gateway in process, in front of fixture backends on loopback: relaying whole and streamed answers,
// retries, ejection, keys, bad input, and a client that leaves.
#include "route/gateway.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "fixture_backend.h"
#include "http/server.h"
#include "route/tenants.h"
#include "serve_process.h"

namespace tern::route {
namespace {

using nlohmann::json;
using testing::FixtureBackend;
using testing::FixtureMode;
using testing::FixtureOptions;

bool wait_until(const std::function<bool()>& condition, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
        if (condition()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return condition();
}

// A gateway and its HTTP server on a free port, from a config text.
class RouteUnderTest {
public:
    explicit RouteUnderTest(const std::string& config_text) {
        Result<RouteConfig> config = parse_route_config(config_text, "test.toml");
        if (!config.is_ok()) throw std::runtime_error(config.status().message());
        gateway_ = std::make_unique<Gateway>(std::move(config.value()), [this](const std::string& line) {
            std::lock_guard lock(mutex_);
            log_.push_back(json::parse(line));
        });
        http::ServerOptions options;
        options.port = 0;
        server_ = std::make_unique<http::Server>(options, *gateway_);
        if (!server_->bind().is_ok()) throw std::runtime_error("bind");
        serving_ = std::thread([this] { server_->serve(); });
    }
    ~RouteUnderTest() {
        server_->stop();
        serving_.join();
    }
    int port() const { return server_->bound_port(); }
    Gateway& gateway() { return *gateway_; }
    std::vector<json> log() {
        std::lock_guard lock(mutex_);
        return log_;
    }

private:
    std::mutex mutex_;
    std::vector<json> log_;
    std::unique_ptr<Gateway> gateway_;
    std::unique_ptr<http::Server> server_;
    std::thread serving_;
};

std::string pool_config(const std::vector<std::string>& urls, const std::string& extra = "") {
    std::string list;
    for (const std::string& url : urls) list += (list.empty() ? "\"" : ", \"") + url + "\"";
    return "[health]\ninterval_ms = 100\ntimeout_ms = 200\neject_after_failures = 2\n[listen]\nupstream_timeout_s = 2\n"
           "[pools.main]\nbackends = [" + list + "]\n[models.m]\npool = \"main\"\n" + extra;
}

const std::string kCompletion = R"({"model": "m", "prompt": "hello", "max_tokens": 8})";
const std::string kStream = R"({"model": "m", "prompt": "hello", "stream": true})";  // the fixture's length



TEST(RouteGateway, RelaysWholeAndStreamedAnswers) {
    FixtureBackend backend(FixtureOptions{.chunks = 5});
    RouteUnderTest route(pool_config({backend.url()}));
    const testing::HttpReply whole = testing::http_post(route.port(), "/v1/completions", kCompletion);
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(json::parse(whole.body)["choices"][0]["text"], "tok tok tok tok tok tok tok tok ");  // max_tokens 8

    const testing::StreamReply stream = testing::post_stream(route.port(), "/v1/chat/completions",
        R"({"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": true})");
    ASSERT_EQ(stream.status, 200) << stream.body;
    ASSERT_TRUE(stream.done);
    ASSERT_EQ(stream.events.size(), 6u);  // five chunks and [DONE], each relayed as its own event
    EXPECT_EQ(json::parse(stream.events[0])["choices"][0]["delta"]["content"], "tok ");
    EXPECT_EQ(backend.requests(), 2);
    // The access log line is written once the answer's last bytes went out, which the client may see first.
    ASSERT_TRUE(wait_until([&] { return route.log().size() == 2; }, std::chrono::seconds(2))) << route.log().size();
    const std::vector<json> log = route.log();
    EXPECT_EQ(log[1]["status"], 200);
    EXPECT_EQ(log[1]["stream"], true);
    EXPECT_EQ(log[1]["replica"], backend.url());
}

TEST(RouteGateway, StreamEventsArriveAsTheBackendSendsThem) {
    FixtureBackend backend(FixtureOptions{.chunks = 10, .chunks_per_second = 20});  // one chunk every 50 ms
    RouteUnderTest route(pool_config({backend.url()}));
    std::vector<std::chrono::steady_clock::time_point> arrivals;
    const testing::StreamReply stream = testing::post_stream(route.port(), "/v1/completions", kStream,
                                                             [&](const std::string&) {
                                                                 arrivals.push_back(std::chrono::steady_clock::now());
                                                                 return true;
                                                             });
    ASSERT_EQ(stream.status, 200);
    ASSERT_EQ(arrivals.size(), 11u);
    // Relayed, not buffered: the chunks come spread over the backend's 450 ms, not all at the end.
    const auto spread = std::chrono::duration<double, std::milli>(arrivals[9] - arrivals[0]).count();
    EXPECT_GT(spread, 300) << "the events arrived together: the router buffered the stream";
}

TEST(RouteGateway, ARefusedConnectionIsRetriedOnAnotherReplicaAndTheDeadOneEjected) {
    FixtureBackend backend;
    const testing::RefusingPort dead;
    RouteUnderTest route(pool_config({dead.url(), backend.url()}));
    for (int idx = 0; idx < 6; ++idx) {
        const testing::HttpReply reply = testing::http_post(route.port(), "/v1/completions", kCompletion);
        ASSERT_EQ(reply.status, 200) << reply.body;
    }
    EXPECT_EQ(backend.requests(), 6);
    const std::vector<json> log = route.log();  // each line was written before its answer went out
    ASSERT_EQ(log.size(), 6u) << json(log).dump();
    EXPECT_GE(std::count_if(log.begin(), log.end(), [](const json& line) { return line["attempts"] == 2; }), 1);
}

TEST(RouteGateway, A500BeforeAnyBodyIsRetriedElsewhere) {
    FixtureBackend failing(FixtureOptions{.mode = FixtureMode::kStatus500});
    FixtureBackend healthy;
    RouteUnderTest route(pool_config({failing.url(), healthy.url()}) + "");
    for (int idx = 0; idx < 4; ++idx) {
        ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    }
    EXPECT_EQ(healthy.requests(), 4);
}

// A replica at its capacity says 429: another may have room. It is not a failure, so the replica stays in.
TEST(RouteGateway, A429FromAReplicaIsRetriedElsewhereWithoutEjectingIt) {
    FixtureBackend full(FixtureOptions{.mode = FixtureMode::kStatus429});
    FixtureBackend healthy;
    RouteUnderTest route(pool_config({full.url(), healthy.url()}));
    for (int idx = 0; idx < 4; ++idx) {
        ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    }
    EXPECT_EQ(healthy.requests(), 4);
    const std::string metrics = testing::http_get(route.port(), "/metrics").body;
    EXPECT_EQ(testing::metric_value(metrics, "tern_route:replica_healthy{replica=\"" + full.url() + "\"}"), 1);
}

// Sequential requests reuse one kept connection to the replica, instead of a connect (and an accept) each.
TEST(RouteGateway, ConnectionsToAReplicaAreKeptAndReused) {
    FixtureBackend backend;
    RouteUnderTest route(pool_config({backend.url()}));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the health checker's connection is open
    const int before = backend.connections();
    for (int idx = 0; idx < 20; ++idx) {
        ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
        ASSERT_EQ(testing::post_stream(route.port(), "/v1/completions", kStream).status, 200);
    }
    EXPECT_EQ(backend.requests(), 40);
    // Connections closed after each request would leave none open; reused, one or two stay (a stream's is kept a
    // moment after its client has [DONE], so the next request may open a second one).
    const int kept = backend.connections() - before;
    EXPECT_GE(kept, 1);
    EXPECT_LE(kept, 2);
}

// A kept connection the replica closed while it sat idle is found dead on its next use: the call connects afresh,
// the client sees nothing of it, and the replica is not counted as failing.
TEST(RouteGateway, AKeptConnectionTheReplicaClosedIsReplacedUnseen) {
    FixtureBackend backend(FixtureOptions{.idle_timeout_s = 1});
    RouteUnderTest route(pool_config({backend.url()}));
    for (int round = 0; round < 3; ++round) {
        // Counted before the request, while the kept connection is busy: a count of open connections read after
        // the reply missed the close when the reply came late on a loaded machine.
        const int64_t closed = backend.connections_closed();
        const testing::HttpReply reply = testing::http_post(route.port(), "/v1/completions", kCompletion);
        ASSERT_EQ(reply.status, 200) << reply.body;
        // The router's kept connection is closed by the fixture after a second idle (the health checker's, used
        // every 100 ms, stays).
        ASSERT_TRUE(wait_until([&] { return backend.connections_closed() > closed; }, std::chrono::seconds(5)));
    }
    ASSERT_TRUE(wait_until([&] { return route.log().size() == 3; }, std::chrono::seconds(2)));
    for (const json& line : route.log()) EXPECT_EQ(line["attempts"], 1) << line.dump();
    const std::string metrics = testing::http_get(route.port(), "/metrics").body;
    EXPECT_EQ(metrics.find("tern_route:upstream_failures_total{"), std::string::npos) << metrics;
}

TEST(RouteGateway, WithNoReplicaLeftTheClientGetsAGatewayError) {
    const testing::RefusingPort dead;
    RouteUnderTest route(pool_config({dead.url()}));
    const testing::HttpReply reply = testing::http_post(route.port(), "/v1/completions", kCompletion);
    EXPECT_TRUE(reply.status == 502 || reply.status == 503) << reply.status << " " << reply.body;
    EXPECT_TRUE(json::parse(reply.body).contains("error")) << reply.body;
}

TEST(RouteGateway, AHangingBackendTimesOutWithACleanError) {
    FixtureBackend hanging(FixtureOptions{.mode = FixtureMode::kHang});
    RouteUnderTest route(pool_config({hanging.url()}));
    const testing::HttpReply reply = testing::http_post(route.port(), "/v1/completions", kCompletion);
    EXPECT_EQ(reply.status, 504) << reply.body;
    EXPECT_NE(reply.body.find("timeout"), std::string::npos) << reply.body;
    EXPECT_EQ(testing::http_get(route.port(), "/health").status, 200);  // still serving
}

TEST(RouteGateway, ABrokenStreamEndsWithAnErrorEvent) {
    FixtureBackend broken(FixtureOptions{.chunks = 3, .mode = FixtureMode::kBrokenSse});
    RouteUnderTest route(pool_config({broken.url()}));
    const testing::StreamReply stream = testing::post_stream(route.port(), "/v1/completions", kStream);
    ASSERT_EQ(stream.status, 200);
    ASSERT_FALSE(stream.events.empty());
    const json last = json::parse(stream.events.back(), nullptr, false);
    ASSERT_FALSE(last.is_discarded()) << stream.events.back();
    EXPECT_TRUE(last.contains("error")) << stream.events.back();
}

TEST(RouteGateway, AClientThatLeavesCancelsTheUpstreamRequest) {
    FixtureBackend backend(FixtureOptions{.chunks = 1000, .chunks_per_second = 50});
    RouteUnderTest route(pool_config({backend.url()}));
    int seen = 0;
    const testing::StreamReply stream = testing::post_stream(route.port(), "/v1/completions", kStream,
                                                             [&](const std::string&) { return ++seen < 3; });
    EXPECT_TRUE(stream.dropped);
    EXPECT_TRUE(wait_until([&] { return backend.cancelled() == 1 && backend.active() == 0; },
                           std::chrono::seconds(2)))
        << "cancelled " << backend.cancelled() << ", active " << backend.active();
}

TEST(RouteGateway, KeysAreCheckedBeforeAnyBackendIsReached) {
    FixtureBackend backend;
    const std::string tenants = "[tenants.acme]\nkey_sha256 = \"" + std::string("85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa") +
                                "\"\n";
    RouteUnderTest route(pool_config({backend.url()}, tenants));
    EXPECT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 401);
    EXPECT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion, {{"Authorization", "Bearer wrong"}}).status,
              401);
    EXPECT_EQ(testing::http_get(route.port(), "/v1/models", {{"Authorization", "Bearer wrong"}}).status, 401);
    EXPECT_EQ(backend.requests(), 0);
    EXPECT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion, {{"Authorization", "Bearer secret-key"}})
                  .status,
              200);
    EXPECT_EQ(backend.requests(), 1);
}

TEST(RouteGateway, BadRequestsGetClearErrorsWithoutReachingABackend) {
    FixtureBackend backend;
    RouteUnderTest route(pool_config({backend.url()}));
    struct Case {
        std::string path, body;
        int status;
        std::string says;
    };
    for (const Case& item : std::vector<Case>{
             {"/v1/completions", "{not json", 400, "JSON object"},
             {"/v1/completions", R"({"prompt": "x"})", 400, "'model'"},
             {"/v1/completions", R"({"model": "nope", "prompt": "x"})", 404, "ask for one of: m"},
             {"/v1/embeddings", R"({"model": "m"})", 404, "no such endpoint"},
             {"/v1/completions", R"({"model": "m", "prompt": )" + std::string(200000, '[') + std::string(200000, ']') + "}",
              400, "nests deeper than 64 levels"},
         }) {
        const testing::HttpReply reply = testing::http_post(route.port(), item.path, item.body);
        EXPECT_EQ(reply.status, item.status) << item.body;
        EXPECT_NE(reply.body.find(item.says), std::string::npos) << reply.body;
    }
    EXPECT_EQ(backend.requests(), 0);
    const testing::HttpReply models = testing::http_get(route.port(), "/v1/models");
    ASSERT_EQ(models.status, 200);
    EXPECT_EQ(json::parse(models.body)["data"][0]["id"], "m");
}

TEST(RouteGateway, AnUnreadyReplicaIsTakenOutAndComesBack) {
    FixtureBackend first;
    FixtureBackend second;
    RouteUnderTest route(pool_config({first.url(), second.url()}));
    first.set_ready(false);
    ASSERT_TRUE(wait_until([&] {
        const std::string metrics = testing::http_get(route.port(), "/metrics").body;
        return testing::metric_value(metrics, "tern_route:replica_healthy{replica=\"" + first.url() + "\"}") == 0;
    }, std::chrono::seconds(2)));
    for (int idx = 0; idx < 4; ++idx) ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    EXPECT_EQ(first.requests(), 0);
    EXPECT_EQ(second.requests(), 4);
    first.set_ready(true);
    EXPECT_TRUE(wait_until([&] {
        const std::string metrics = testing::http_get(route.port(), "/metrics").body;
        return testing::metric_value(metrics, "tern_route:replica_healthy{replica=\"" + first.url() + "\"}") == 1;
    }, std::chrono::milliseconds(300)));  // two health intervals
}

const std::string kKeyHash = "85dbe15d75ef9308c7ae0f33c7a324cc6f4bf519a2ed2f3027bd33c140a4f9aa";  // "secret-key"

std::string two_tenants() {
    return "[tenants.a]\nkey_sha256 = \"" + kKeyHash + "\"\n[tenants.b]\nkey_sha256 = \"" +
           to_hex(sha256("other-key")) + "\"\n";
}

TEST(RouteGateway, ARepeatedGreedyRequestIsAnsweredByteIdenticalFromTheCache) {
    FixtureBackend backend(FixtureOptions{.chunks = 4});
    RouteUnderTest route(pool_config({backend.url()}, "[cache]\nttl_s = 60\n"));
    const std::string greedy = R"({"model": "m", "prompt": "hello", "max_tokens": 4, "temperature": 0})";
    const testing::HttpReply first = testing::http_post(route.port(), "/v1/completions", greedy);
    const testing::HttpReply second = testing::http_post(route.port(), "/v1/completions", greedy);
    ASSERT_EQ(first.status, 200);
    ASSERT_EQ(second.status, 200);
    EXPECT_EQ(first.body, second.body);
    EXPECT_EQ(backend.requests(), 1);
    // Streamed: replayed as SSE, event for event.
    const std::string streamed = R"({"model": "m", "prompt": "hello", "temperature": 0, "stream": true})";
    const testing::StreamReply live = testing::post_stream(route.port(), "/v1/completions", streamed);
    const testing::StreamReply replayed = testing::post_stream(route.port(), "/v1/completions", streamed);
    ASSERT_TRUE(live.done && replayed.done);
    EXPECT_EQ(live.events, replayed.events);
    EXPECT_EQ(backend.requests(), 2);
    // Sampling without a seed is never cached; with a seed it is.
    const std::string sampled = R"({"model": "m", "prompt": "hello", "temperature": 0.8})";
    testing::http_post(route.port(), "/v1/completions", sampled);
    testing::http_post(route.port(), "/v1/completions", sampled);
    EXPECT_EQ(backend.requests(), 4);
    const std::string seeded = R"({"model": "m", "prompt": "hello", "temperature": 0.8, "seed": 3})";
    testing::http_post(route.port(), "/v1/completions", seeded);
    testing::http_post(route.port(), "/v1/completions", seeded);
    EXPECT_EQ(backend.requests(), 5);
    EXPECT_EQ(testing::metric_value(testing::http_get(route.port(), "/metrics").body, "tern_route:cache_hits_total"), 3);
}

TEST(RouteGateway, AnotherTenantsIdenticalRequestIsNotAnsweredFromTheCache) {
    FixtureBackend backend;
    RouteUnderTest route(pool_config({backend.url()}, "[cache]\n" + two_tenants()));
    const std::string greedy = R"({"model": "m", "prompt": "hello", "temperature": 0})";
    ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", greedy, {{"Authorization", "Bearer secret-key"}}).status, 200);
    ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", greedy, {{"Authorization", "Bearer other-key"}}).status, 200);
    EXPECT_EQ(backend.requests(), 2);
    ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", greedy, {{"Authorization", "Bearer other-key"}}).status, 200);
    EXPECT_EQ(backend.requests(), 2);
}

TEST(RouteGateway, FiftyIdenticalRequestsAtOnceReachTheBackendOnce) {
    FixtureBackend backend(FixtureOptions{.chunks = 10, .chunks_per_second = 20});  // half a second each
    RouteUnderTest route(pool_config({backend.url()}, "[cache]\n"));
    const std::string greedy = R"({"model": "m", "prompt": "the same", "temperature": 0})";
    std::vector<testing::HttpReply> replies(50);
    std::vector<std::thread> clients;
    for (auto& reply : replies) {
        clients.emplace_back([&] { reply = testing::http_post(route.port(), "/v1/completions", greedy); });
    }
    for (std::thread& client : clients) client.join();
    for (const auto& reply : replies) {
        ASSERT_EQ(reply.status, 200) << reply.body;
        EXPECT_EQ(reply.body, replies[0].body);
    }
    EXPECT_EQ(backend.requests(), 1);
}

TEST(RouteGateway, ARequestRateBudgetIsKeptAndRefusalsNeverReachABackend) {
    FixtureBackend backend;
    RouteUnderTest route(pool_config({backend.url()}, "[tenants.a]\nkey_sha256 = \"" + kKeyHash +
                                                          "\"\nrequests_per_minute = 1200\n"));  // 20 a second
    const auto start = std::chrono::steady_clock::now();
    int admitted = 0, refused = 0;
    while (std::chrono::steady_clock::now() - start < std::chrono::seconds(3)) {
        const testing::HttpReply reply = testing::http_post(route.port(), "/v1/completions", kCompletion,
                                                            {{"Authorization", "Bearer secret-key"}});
        if (reply.status == 200) ++admitted;
        if (reply.status == 429) {
            ++refused;
            EXPECT_FALSE(reply.retry_after.empty());
        }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GT(refused, 0);
    EXPECT_NEAR(admitted, 20 + 20 * seconds, 0.05 * 20 * seconds) << "admitted " << admitted << " in " << seconds << " s";
    EXPECT_EQ(backend.requests(), admitted);
    // The tenant's own counters (the last relayed request is counted once its answer went out).
    const std::string relayed = "tern_route:tenant_requests_total{tenant=\"a\",code=\"200\"}";
    std::string metrics;
    ASSERT_TRUE(wait_until([&] {
        metrics = testing::http_get(route.port(), "/metrics").body;
        return testing::metric_value(metrics, relayed) == admitted;
    }, std::chrono::seconds(2))) << metrics;
    EXPECT_EQ(testing::metric_value(metrics, "tern_route:tenant_requests_total{tenant=\"a\",code=\"429\"}"), refused);
    EXPECT_EQ(testing::metric_value(metrics, "tern_route:tenant_tokens_total{tenant=\"a\"}"), 12.0 * admitted)
        << "the fixture reports 4 prompt + 8 completion tokens";
}

TEST(RouteGateway, AnAdminRollbackAppliesToTheNextRequest) {
    FixtureBackend stable;
    FixtureBackend next;
    const std::string config =
        "[pools.a]\nbackends = [\"" + stable.url() + "\"]\n[pools.b]\nbackends = [\"" + next.url() + "\"]\n"
        "[models.m]\nversions = [{ name = \"stable\", pool = \"a\", weight = 50 }, { name = \"next\", pool = \"b\", weight = 50 }]\n"
        "[admin]\nkey_sha256 = \"" + kKeyHash + "\"\n";
    RouteUnderTest route(config);
    for (int idx = 0; idx < 40; ++idx) ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    EXPECT_GT(stable.requests(), 5);
    EXPECT_GT(next.requests(), 5);
    const std::string rollback = R"({"model": "m", "weights": {"stable": 100, "next": 0}})";
    EXPECT_EQ(testing::http_post(route.port(), "/admin/weights", rollback).status, 401);
    EXPECT_EQ(testing::http_post(route.port(), "/admin/weights", rollback, {{"Authorization", "Bearer wrong"}}).status, 401);
    EXPECT_EQ(testing::http_post(route.port(), "/admin/weights", R"({"model": "m", "weights": {"stable": 1}})",
                                 {{"Authorization", "Bearer secret-key"}}).status, 400);
    ASSERT_EQ(testing::http_post(route.port(), "/admin/weights", rollback, {{"Authorization", "Bearer secret-key"}}).status,
              200);
    const int next_before = next.requests();
    for (int idx = 0; idx < 20; ++idx) ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    EXPECT_EQ(next.requests(), next_before);
}

std::string two_tier_config(const FixtureBackend& small, const FixtureBackend& large) {
    return "[pools.small]\nbackends = [\"" + small.url() + "\"]\n[pools.large]\nbackends = [\"" + large.url() +
           "\"]\n[models.m]\nsmall = \"small\"\nlarge = \"large\"\n"
           "escalate = { below_mean_logprob = -1.0, refusals = [\"I cannot\"] }\n"
           "prices = { small = 0.1, large = 1.0 }\n";
}

TEST(RouteGateway, TwoTierKeepsAConfidentSmallAnswerAndEscalatesAnUnsureOne) {
    FixtureBackend confident(FixtureOptions{.chunks = 3, .logprob = -0.2, .token_text = "small ", .finish_reason = "stop"});
    FixtureBackend large(FixtureOptions{.chunks = 3, .token_text = "large ", .finish_reason = "stop"});
    {
        RouteUnderTest route(two_tier_config(confident, large));
        const testing::HttpReply whole = testing::http_post(route.port(), "/v1/completions", R"({"model": "m", "prompt": "x"})");
        ASSERT_EQ(whole.status, 200) << whole.body;
        const json answer = json::parse(whole.body);
        EXPECT_EQ(answer["choices"][0]["text"], "small small small ");
        EXPECT_TRUE(answer["choices"][0]["logprobs"].is_null()) << "the logprobs the router asked for are removed";
        // Streamed: the small answer is replayed as SSE.
        const testing::StreamReply stream = testing::post_stream(route.port(), "/v1/chat/completions",
            R"({"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": true})");
        ASSERT_EQ(stream.status, 200);
        ASSERT_TRUE(stream.done);
        EXPECT_EQ(json::parse(stream.events[0])["choices"][0]["delta"]["content"], "small small small ");
        EXPECT_EQ(large.requests(), 0);
    }
    FixtureBackend unsure(FixtureOptions{.chunks = 3, .logprob = -2.5, .token_text = "small ", .finish_reason = "stop"});
    RouteUnderTest route(two_tier_config(unsure, large));
    const testing::HttpReply whole = testing::http_post(route.port(), "/v1/completions", R"({"model": "m", "prompt": "x"})");
    ASSERT_EQ(whole.status, 200) << whole.body;
    EXPECT_EQ(json::parse(whole.body)["choices"][0]["text"], "large large large ");
    EXPECT_EQ(unsure.requests(), 1);
    EXPECT_EQ(large.requests(), 1);
    const std::string metrics = testing::http_get(route.port(), "/metrics").body;
    EXPECT_EQ(testing::metric_value(metrics, "tern_route:escalations_total{model=\"m\",reason=\"logprob\"}"), 1);
}

TEST(RouteGateway, TwoTierEscalatesARefusalAndAnAnswerCutOnLength) {
    FixtureBackend refusing(FixtureOptions{.chunks = 2, .logprob = -0.1, .token_text = "I cannot ", .finish_reason = "stop"});
    FixtureBackend cut(FixtureOptions{.chunks = 2, .logprob = -0.1, .finish_reason = "length"});
    FixtureBackend large(FixtureOptions{.chunks = 1, .token_text = "large", .finish_reason = "stop"});
    for (FixtureBackend* small : {&refusing, &cut}) {
        RouteUnderTest route(two_tier_config(*small, large));
        const testing::HttpReply whole = testing::http_post(route.port(), "/v1/completions", R"({"model": "m", "prompt": "x"})");
        ASSERT_EQ(whole.status, 200) << whole.body;
        EXPECT_EQ(json::parse(whole.body)["choices"][0]["text"], "large");
    }
    EXPECT_EQ(large.requests(), 2);
}

// Every answer of the fixtures is 4 prompt + 3 completion tokens; prices are 0.1 and 1.0 per million tokens.
TEST(RouteGateway, TwoTierCountsEachTiersTokensAndCostAgainstLargeOnly) {
    FixtureBackend small(FixtureOptions{.chunks = 3, .logprob = -0.2, .finish_reason = "stop", .unsure_marker = "hard",
                                        .unsure_logprob = -2.5});
    FixtureBackend large(FixtureOptions{.chunks = 3, .token_text = "large ", .finish_reason = "stop"});
    RouteUnderTest route(two_tier_config(small, large));
    for (const char* prompt : {"easy one", "easy two", "easy three"}) {
        const std::string body = std::string(R"({"model": "m", "prompt": ")") + prompt + "\"}";
        ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", body).status, 200);
    }
    // The escalated request streams: the router asks the large tier for its usage, and the client does not see it.
    const testing::StreamReply hard =
        testing::post_stream(route.port(), "/v1/completions", R"({"model": "m", "prompt": "hard", "stream": true})");
    ASSERT_EQ(hard.status, 200);
    ASSERT_TRUE(hard.done);
    for (const std::string& event : hard.events) {
        if (event != "[DONE]") {
            EXPECT_FALSE(json::parse(event).contains("usage")) << event;
        }
    }
    // The large answer is counted once it went out, a moment after the client read its last byte.
    const std::string large_answered = "tern_route:two_tier_requests_total{model=\"m\",tier=\"large\"}";
    std::string metrics;
    for (int tries = 0; tries < 200 && !(testing::metric_value(metrics, large_answered) >= 1); ++tries) {
        if (tries > 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
        metrics = testing::http_get(route.port(), "/metrics").body;
    }
    const auto value = [&](const std::string& sample) { return testing::metric_value(metrics, sample); };
    EXPECT_EQ(value("tern_route:two_tier_requests_total{model=\"m\",tier=\"small\"}"), 3);
    EXPECT_EQ(value("tern_route:two_tier_requests_total{model=\"m\",tier=\"large\"}"), 1);
    EXPECT_EQ(value("tern_route:two_tier_tokens_total{model=\"m\",tier=\"small\"}"), 4 * 7) << "the escalated one too";
    EXPECT_EQ(value("tern_route:two_tier_tokens_total{model=\"m\",tier=\"large\"}"), 7);
    EXPECT_NEAR(value("tern_route:two_tier_cost_total{model=\"m\",basis=\"actual\"}"), (28 * 0.1 + 7 * 1.0) / 1e6, 1e-12);
    EXPECT_NEAR(value("tern_route:two_tier_cost_total{model=\"m\",basis=\"large_only\"}"), (21 + 7) * 1.0 / 1e6, 1e-12);
}

std::string policy_config(const std::vector<std::string>& urls, const std::string& policy) {
    std::string list;
    for (const std::string& url : urls) list += (list.empty() ? "\"" : ", \"") + url + "\"";
    return "[health]\nscrape_interval_ms = 20\n[pools.main]\nbackends = [" + list + "]\npolicy = \"" + policy +
           "\"\n[models.m]\npool = \"main\"\n";
}

TEST(RouteGateway, LoadAwareSendsToTheReplicaWhoseQueueIsShorter) {
    FixtureBackend busy;
    FixtureBackend idle;
    busy.set_load(20, 0.9);  // what its /metrics says
    RouteUnderTest route(policy_config({busy.url(), idle.url()}, "load_aware"));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // several scrapes
    for (int idx = 0; idx < 10; ++idx) ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    EXPECT_EQ(busy.requests(), 0);
    EXPECT_EQ(idle.requests(), 10);
    busy.set_load(0, 0);
    idle.set_load(20, 0.9);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int idx = 0; idx < 10; ++idx) ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", kCompletion).status, 200);
    EXPECT_EQ(busy.requests(), 10);
}

TEST(RouteGateway, PrefixAffinityKeepsASharedPromptOnOneReplica) {
    std::vector<std::unique_ptr<FixtureBackend>> replicas;
    std::vector<std::string> urls;
    for (int idx = 0; idx < 3; ++idx) {
        replicas.push_back(std::make_unique<FixtureBackend>());
        urls.push_back(replicas.back()->url());
    }
    RouteUnderTest route(policy_config(urls, "prefix_affinity"));
    const std::string system(300, 's');  // longer than the bytes that decide
    for (int idx = 0; idx < 12; ++idx) {
        const json body = {{"model", "m"}, {"prompt", system + " question " + std::to_string(idx)}};
        ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", body.dump()).status, 200);
    }
    int used = 0;
    for (const auto& replica : replicas) used += replica->requests() > 0 ? 1 : 0;
    EXPECT_EQ(used, 1) << "one shared prompt, one replica (requests one after another never exceed the load bound)";
    for (int idx = 0; idx < 30; ++idx) {
        const json body = {{"model", "m"}, {"prompt", "topic " + std::to_string(idx) + std::string(300, 'x')}};
        ASSERT_EQ(testing::http_post(route.port(), "/v1/completions", body.dump()).status, 200);
    }
    for (const auto& replica : replicas) EXPECT_GT(replica->requests(), 0) << "different prompts spread";
}

}  // namespace
}  // namespace tern::route

"""scripts/bench-route: tern route measured against fixture backends (and `tern serve` replicas: route_bench_serve.py).

usage: route_bench.py BUILD SCENARIO...
Fixture backends (build/route_fixture_server) stream at a known rate, so what is measured is the router. Load comes
from `tern bench serve` where it fits, else from keep-alive HTTP clients in threads (what an SDK holds).
"""
import json
import os
import random
import sys
import threading
import time

from route_bench_common import (Bench, Client, cpu_seconds, fixture_requests, metric_sum, metrics, ms, percentile,
                                sha256_hex, stop)
import route_bench_serve

BENCH = Bench(sys.argv[1])


def in_threads(count, work):
    """Runs work(index) in `count` threads and returns their results."""
    results = [None] * count

    def run(index):
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(index,)) for index in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def overhead():
    """200 concurrent streams, direct and through the router: added TTFT, and the router's CPU per relayed event.
    The router has a core of its own (as it would in a deployment); the fixture and the load generator share the
    other, in both runs."""
    fixture, fixture_url = BENCH.fixture_process("overhead-fixture.log", "--chunks-per-second", "50", cpus="0")
    router, router_url = BENCH.route_process(
        f'[listen]\nport = 0\nmax_connections = 20000\n[pools.main]\nbackends = ["{fixture_url}"]\n'
        '[models.fixture]\npool = "main"\n', "overhead-route.log", cpus="1")
    flags = ["--model", "fixture", "--num-prompts", 2000, "--max-concurrency", 200, "--input-len", 16,
             "--output-len", 16, "--num-warmups", 200]
    try:
        fixture_before = cpu_seconds(fixture.pid)
        direct = BENCH.bench_serve(fixture_url, "overhead-direct", *flags, cpus="0")
        fixture_direct = cpu_seconds(fixture.pid) - fixture_before
        before, fixture_before = cpu_seconds(router.pid), cpu_seconds(fixture.pid)
        routed = BENCH.bench_serve(router_url, "overhead-route", *flags, cpus="0")
        router_cpu = cpu_seconds(router.pid) - before
        fixture_routed = cpu_seconds(fixture.pid) - fixture_before
        events = routed["total_output_tokens"] + routed["completed"]  # every token's event and each [DONE]
        print("| | direct | through tern route | added |")
        print("| --- | ---: | ---: | ---: |")
        for name in ("median_ttft_ms", "p99_ttft_ms", "median_e2el_ms", "p99_e2el_ms"):
            print(f"| {name} | {direct[name]:.2f} | {routed[name]:.2f} | {routed[name] - direct[name]:+.2f} |")
        print(f"| completed / failed | {direct['completed']} / {direct['failed']} | "
              f"{routed['completed']} / {routed['failed']} | |")
        print(f"router CPU: {router_cpu:.2f} s for {events} relayed events: {1e6 * router_cpu / events:.1f} us each")
        print(f"fixture CPU (warm-ups included): {fixture_direct:.2f} s direct, {fixture_routed:.2f} s through the router")
        for label, run in (("direct", direct), ("through the router", routed)):
            if run["failed"]:
                print(f"failed {label}: {run['errors_by_kind']}")
    finally:
        stop(router)
        stop(fixture)


def parallel():
    """8 fixtures at 50 tokens/s per stream and at most 8 streams each: 8 through the router against 8 x one."""
    fixtures = [BENCH.fixture_process(f"parallel-fixture-{i}.log", "--chunks-per-second", "50", "--max-concurrency",
                                      "8") for i in range(8)]
    flags = ["--model", "fixture", "--input-len", 16, "--output-len", 64]
    try:
        one = BENCH.bench_serve(fixtures[0][1], "parallel-one", *flags, "--max-concurrency", 8, "--num-prompts", 160,
                                "--num-warmups", 8)
        backends = ", ".join(f'"{url}"' for _, url in fixtures)
        router, router_url = BENCH.route_process(
            f'[pools.main]\nbackends = [{backends}]\n[models.fixture]\npool = "main"\n', "parallel-route.log")
        try:
            eight = BENCH.bench_serve(router_url, "parallel-eight", *flags, "--max-concurrency", 64, "--num-prompts",
                                      1280, "--num-warmups", 50)
        finally:
            stop(router)
        ratio = eight["output_throughput"] / (8 * one["output_throughput"])
        print(f"one replica: {one['output_throughput']:.0f} tokens/s ({one['failed']} failed); "
              f"8 through the router: {eight['output_throughput']:.0f} tokens/s ({eight['failed']} failed): "
              f"{ratio:.3f} x 8 x one")
    finally:
        for process, _ in fixtures:
            stop(process)


def timed(client, count, body_of, headers=None):
    """`count` sequential requests on one keep-alive connection; returns (latencies, bodies, statuses)."""
    latencies, bodies, statuses = [], [], []
    for index in range(count):
        status, body, seconds = client.post("/v1/completions", body_of(index), headers)
        latencies.append(seconds)
        bodies.append(body)
        statuses.append(status)
    return latencies, bodies, statuses


def cache():
    """A repeated temperature-0 request answered from the cache: its latency, against a miss and the backend alone."""
    fixture, fixture_url = BENCH.fixture_process("cache-fixture.log", "--chunks", "16")
    router, router_url = BENCH.route_process(
        f'[pools.main]\nbackends = ["{fixture_url}"]\n[models.fixture]\npool = "main"\n'
        '[cache]\nttl_s = 600\nmax_bytes = 67108864\n', "cache-route.log")
    count = 2000
    same = {"model": "fixture", "prompt": "The same question", "max_tokens": 16, "temperature": 0}
    try:
        rows = []
        direct, _, _ = timed(Client(fixture_url), count, lambda i: same)
        rows.append(("the fixture backend alone", direct))
        misses, _, _ = timed(Client(router_url), count, lambda i: {**same, "prompt": f"question {i}"})
        rows.append(("through the router, a miss (a new prompt each time)", misses))
        client = Client(router_url)
        hits, bodies, statuses = timed(client, count + 1, lambda i: same)
        rows.append(("through the router, a cache hit", hits[1:]))
        streamed, _, _ = timed(client, count, lambda i: {**same, "stream": True})
        rows.append(("through the router, a hit replayed as SSE", streamed[1:]))
        print("| requests, one keep-alive connection | count | p50 ms | p99 ms |")
        print("| --- | ---: | ---: | ---: |")
        for label, latencies in rows:
            print(f"| {label} | {len(latencies)} | {ms(percentile(latencies, 0.5))} | {ms(percentile(latencies, 0.99))} |")
        identical = all(body == bodies[0] for body in bodies) and all(status == 200 for status in statuses)
        print(f"byte-identical answers: {identical}; cache hits counted by the router: "
              f"{metric_sum(metrics(router_url), 'tern_route:cache_hits_total'):.0f}")
    finally:
        stop(router)
        stop(fixture)
    print(f"requests that reached the fixture: {fixture_requests(os.path.join(BENCH.out, 'cache-fixture.log'))}")


def limits():
    """A key with 1,200 requests/min hammered by 8 clients for 30 s: admitted against the budget; what reached the
    backend; a wrong key's requests."""
    fixture, fixture_url = BENCH.fixture_process("limits-fixture.log", "--chunks", "1")
    router, router_url = BENCH.route_process(
        f'[pools.main]\nbackends = ["{fixture_url}"]\n[models.fixture]\npool = "main"\n'
        f'[tenants.bench]\nkey_sha256 = "{sha256_hex("bench-key")}"\nrequests_per_minute = 1200\n', "limits-route.log")
    seconds = 30
    body = {"model": "fixture", "prompt": "hi", "max_tokens": 1}
    try:
        started = time.monotonic()

        def hammer(_):
            client, counts = Client(router_url), {}
            while time.monotonic() - started < seconds:
                status, _, _ = client.post("/v1/completions", body, {"Authorization": "Bearer bench-key"})
                counts[status] = counts.get(status, 0) + 1
            return counts

        totals = {}
        for counts in in_threads(8, hammer):
            for status, count in counts.items():
                totals[status] = totals.get(status, 0) + count
        elapsed = time.monotonic() - started
        wrong = timed(Client(router_url), 200, lambda i: body, {"Authorization": "Bearer wrong-key"})[2]
    finally:
        stop(router)
        stop(fixture)
    budget = 1200 / 60 * elapsed
    admitted = totals.get(200, 0)
    reached = fixture_requests(os.path.join(BENCH.out, "limits-fixture.log"))
    print(f"{elapsed:.1f} s at 1,200 requests/min: budget {budget:.0f} (+ the bucket's one second, 20); "
          f"admitted {admitted} ({admitted / budget - 1:+.1%}), refused 429: {totals.get(429, 0)}, other: "
          f"{ {k: v for k, v in totals.items() if k not in (200, 429)} }")
    print(f"requests that reached the fixture: {reached} (admitted {admitted}); "
          f"wrong key: {wrong.count(401)} of {len(wrong)} answered 401")


def canary_config(fixture_urls, keys):
    lines = [f'[pools.stable]\nbackends = ["{fixture_urls[0]}"]\n[pools.next]\nbackends = ["{fixture_urls[1]}"]\n',
             '[models.fixture]\nversions = [{ name = "stable", pool = "stable", weight = 95 }, '
             '{ name = "next", pool = "next", weight = 5 }]\n', f'[admin]\nkey_sha256 = "{sha256_hex("admin-key")}"\n']
    lines += [f'[tenants.t{index}]\nkey_sha256 = "{sha256_hex(key)}"\n' for index, key in enumerate(keys)]
    return "".join(lines)


def canary():
    """95 / 5 over 2,000 keys and 10,000 requests: the observed share, stickiness, and a rollback."""
    fixtures = [BENCH.fixture_process(f"canary-fixture-{name}.log", "--chunks", "1", "--token-text", name)
                for name in ("stable", "next")]
    keys = [f"key-{index}" for index in range(2000)]
    router, router_url = BENCH.route_process(canary_config([url for _, url in fixtures], keys), "canary-route.log")
    body = {"model": "fixture", "prompt": "hi", "max_tokens": 1}
    seen = {}  # key -> versions it got
    try:
        sequence = keys * 5  # every key 5 times, 10,000 requests in a random order
        random.Random(3).shuffle(sequence)

        def send(thread):
            client, got = Client(router_url), []
            for key in sequence[thread::8]:
                status, answer, _ = client.post("/v1/completions", body, {"Authorization": f"Bearer {key}"})
                got.append((key, json.loads(answer)["choices"][0]["text"] if status == 200 else f"status {status}"))
            return got

        answers = [pair for got in in_threads(8, send) for pair in got]
        for key, version in answers:
            seen.setdefault(key, set()).add(version)
        status, _, _ = Client(router_url).post("/admin/weights", {"model": "fixture", "weights": {"stable": 100,
                                                                                                  "next": 0}},
                                               {"Authorization": "Bearer admin-key"})
        next_keys = [key for key, versions in seen.items() if "next" in versions]
        client = Client(router_url)
        after = [json.loads(client.post("/v1/completions", body, {"Authorization": f"Bearer {key}"})[1])
                 ["choices"][0]["text"] for key in next_keys]
    finally:
        stop(router)
        for process, _ in fixtures:
            stop(process)
    on_next = sum(1 for _, version in answers if version == "next")
    print(f"{len(answers)} requests over {len(seen)} keys: {on_next} to 'next' ({on_next / len(answers):.2%}; "
          f"weight 5%); other answers: {sum(1 for _, v in answers if v not in ('stable', 'next'))}; "
          f"keys that saw both versions: {sum(1 for v in seen.values() if len(v) > 1)}")
    print(f"rollback (admin answered {status}): the {len(next_keys)} keys on 'next' asked again, "
          f"{after.count('stable')} got 'stable', {after.count('next')} 'next'")


def twotier():
    """Easy and hard prompts (the small fixture is unsure on 'HARD'): escalation rate and cost against large-only."""
    small, small_url = BENCH.fixture_process("twotier-small.log", "--logprob", "-0.3", "--unsure-marker", "HARD",
                                             "--unsure-logprob", "-2.5", "--token-text", "small")
    large, large_url = BENCH.fixture_process("twotier-large.log", "--token-text", "large")
    router, router_url = BENCH.route_process(
        f'[pools.small]\nbackends = ["{small_url}"]\n[pools.large]\nbackends = ["{large_url}"]\n'
        '[models.smart]\nsmall = "small"\nlarge = "large"\nescalate = { below_mean_logprob = -1.0, on_length = false }\n'
        'prices = { small = 0.10, large = 1.00 }\n', "twotier-route.log")
    rng = random.Random(7)
    hard = [rng.random() < 0.3 for _ in range(1000)]
    try:
        client = Client(router_url)
        latency = {True: [], False: []}
        for index, is_hard in enumerate(hard):
            prompt = f"{'HARD' if is_hard else 'easy'} question {index}"
            status, _, seconds = client.post("/v1/completions", {"model": "smart", "prompt": prompt, "max_tokens": 32})
            assert status == 200, status
            latency[is_hard].append(seconds)
        samples = metrics(router_url)
    finally:
        stop(router)
        stop(small)
        stop(large)
    label = 'model="smart"'
    escalated = metric_sum(samples, f"tern_route:escalations_total{{{label}")
    actual = samples[f'tern_route:two_tier_cost_total{{{label},basis="actual"}}']
    large_only = samples[f'tern_route:two_tier_cost_total{{{label},basis="large_only"}}']
    print(f"{len(hard)} requests, {sum(hard)} hard: escalated {escalated:.0f} ({escalated / len(hard):.1%})")
    print(f"cost per 1,000 requests at 0.10 / 1.00 per million tokens: {1000 * actual / len(hard):.5f} against "
          f"large-only {1000 * large_only / len(hard):.5f}: {1 - actual / large_only:.1%} saved")
    print(f"latency p50 ms: kept small answers {ms(percentile(latency[False], 0.5))}, escalated "
          f"{ms(percentile(latency[True], 0.5))} (the small answer is waited for first)")


SCENARIOS = {"overhead": overhead, "parallel": parallel, "cache": cache, "limits": limits, "canary": canary,
             "twotier": twotier, **route_bench_serve.scenarios(BENCH)}

for scenario in sys.argv[2:]:
    print(f"== {scenario}", flush=True)
    SCENARIOS[scenario]()

"""scripts/bench-route's scenarios with real `tern serve` replicas of synthetic models (made by `tern synth`):
prefix affinity against round robin, a replica killed under load, and two tiers of real models."""
import http.client
import json
import os
import random
import signal
import statistics
import subprocess
import threading
import time
import urllib.parse

from route_bench_common import Client, metric_sum, metrics, ms, percentile, stop

WORDS = ("river stone light cloud garden window letter morning winter harbor silver forest candle meadow "
         "lantern orchard valley thunder").split()


def synth(bench, preset):
    path = os.path.join(os.path.dirname(bench.out), "models", f"{preset}-q8_0.gguf")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        subprocess.run([bench.tern, "synth", "--preset", preset, "--type", "q8_0", "-o", path], check=True,
                       stdout=subprocess.DEVNULL)
    return path


def stream(client, body, request_id):
    """A streamed completion; returns (status, ttft seconds or None, outcome: 'done', 'error event' or 'cut')."""
    connection = http.client.HTTPConnection(client.host, client.port, timeout=120)
    started = time.perf_counter()
    try:
        connection.request("POST", "/v1/completions", body=json.dumps({**body, "stream": True}).encode(),
                           headers={"Content-Type": "application/json", "x-request-id": request_id})
        reply = connection.getresponse()
        if reply.status != 200:
            reply.read()
            return reply.status, None, "status"
        ttft, outcome = None, "cut"
        for line in reply:
            if not line.startswith(b"data: "):
                continue
            if ttft is None:
                ttft = time.perf_counter() - started
            if line.strip() == b"data: [DONE]":
                outcome = "done"
                break
            if b'"error"' in line:
                outcome = "error event"
                break
        return 200, ttft, outcome
    except OSError:
        return 0, None, "cut"
    finally:
        connection.close()


def replica_health(router_url):
    return {name.split('replica="')[1].rstrip('"}'): value for name, value in metrics(router_url).items()
            if name.startswith("tern_route:replica_healthy{")}


def start_replicas(bench, model, label, count, *flags):
    """`count` replicas of `model`, each on one thread, serving it as "m"."""
    return [bench.serve_process(model, f"{label}-replica-{index}.log", "-t", "1", "--served-model-name", "m", *flags)
            for index in range(count)]


def affinity(bench):
    """24 shared prefixes of about 260 tokens over 3 replicas whose KV (3,888 tokens) holds about 14: prefix-cache hit
    rate and TTFT with prefix affinity (8 prefixes a replica) against round robin (all 24 on each)."""
    model = synth(bench, "small")
    rng = random.Random(11)
    prefixes = [" ".join(rng.choice(WORDS) for _ in range(80)) for _ in range(24)]
    rows = []
    for policy in ("round_robin", "prefix_affinity"):
        replicas = start_replicas(bench, model, f"affinity-{policy}", 3, "--kv-cache-mem", "0.03")
        backends = ", ".join(f'"{url}"' for _, url in replicas)
        router, router_url = bench.route_process(
            f'[pools.main]\nbackends = [{backends}]\npolicy = "{policy}"\n[models.m]\npool = "main"\n',
            f"affinity-{policy}-route.log")
        try:
            before = [metrics(url) for _, url in replicas]
            order = random.Random(5)
            picks = [order.randrange(len(prefixes)) for _ in range(480)]
            ttfts, lock = [], threading.Lock()

            def client_loop(thread):
                client = Client(router_url)
                for index in range(thread, len(picks), 6):
                    body = {"model": "m", "prompt": f"{prefixes[picks[index]]} then question {index}:",
                            "max_tokens": 4, "temperature": 0}
                    status, ttft, outcome = stream(client, body, f"{policy}-{index}")
                    with lock:
                        ttfts.append(ttft if outcome == "done" else float("inf"))

            threads = [threading.Thread(target=client_loop, args=(thread,)) for thread in range(6)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            after = [metrics(url) for _, url in replicas]
        finally:
            stop(router)
            for process, _ in replicas:
                stop(process)
        hits = sum(metric_sum(a, "tern:prefix_cache_hits_total") - metric_sum(b, "tern:prefix_cache_hits_total")
                   for a, b in zip(after, before))
        queried = sum(metric_sum(a, "tern:prefix_cache_queries_total") -
                      metric_sum(b, "tern:prefix_cache_queries_total") for a, b in zip(after, before))
        rows.append((policy, hits / queried, ttfts, sum(1 for t in ttfts if t == float("inf"))))
    print("| policy | prefix-cache hit rate (prompt tokens, replicas' metrics) | TTFT p50 ms | TTFT p99 ms | failed |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for policy, rate, ttfts, failed in rows:
        print(f"| {policy} | {rate:.1%} | {ms(percentile(ttfts, 0.5))} | {ms(percentile(ttfts, 0.99))} | {failed} |")


def faults(bench):
    """SIGKILL one of 3 replicas under mixed load, restart it 3 s later: what clients saw, ejection and rejoin."""
    model = synth(bench, "small")
    replicas = start_replicas(bench, model, "faults", 3, "--kv-cache-mem", "0.05")
    backends = ", ".join(f'"{url}"' for _, url in replicas)
    router, router_url = bench.route_process(
        f'[health]\ninterval_ms = 500\ntimeout_ms = 300\neject_after_failures = 3\n'
        f'[pools.main]\nbackends = [{backends}]\n[models.m]\npool = "main"\n', "faults-route.log")
    victim_process, victim_url = replicas[1]
    results, lock, started = [], threading.Lock(), time.monotonic()
    events = {}

    def load(thread):
        client = Client(router_url)
        index = 0
        while time.monotonic() - started < 14:
            streamed = thread % 2 == 0
            body = {"model": "m", "prompt": f"story {thread}-{index} begins", "max_tokens": 160 if streamed else 32}
            request_id = f"faults-{thread}-{index}"
            if streamed:
                status, _, outcome = stream(client, body, request_id)
            else:
                status, _, _ = client.post("/v1/completions", body, {"x-request-id": request_id})
                outcome = "whole"
            with lock:
                results.append((request_id, streamed, status, outcome))
            index += 1

    def watch():
        while time.monotonic() - started < 14:
            healthy = replica_health(router_url).get(victim_url)
            now = time.monotonic()
            if "killed" in events and "ejected" not in events and healthy == 0:
                events["ejected"] = now
            if "restarted" in events and "rejoined" not in events and healthy == 1:
                events["rejoined"] = now
            time.sleep(0.01)

    threads = [threading.Thread(target=load, args=(thread,)) for thread in range(6)] + [threading.Thread(target=watch)]
    for thread in threads:
        thread.start()
    time.sleep(4)
    in_flight = f'tern_route:replica_requests_in_flight{{replica="{victim_url}"}}'
    while metrics(router_url).get(in_flight, 0) < 2 and time.monotonic() - started < 8:
        time.sleep(0.005)  # kill it with requests under way
    victim_process.send_signal(signal.SIGKILL)
    events["killed"] = time.monotonic()
    victim_process.wait()
    time.sleep(3)
    port = urllib.parse.urlparse(victim_url).port
    restarted, _ = bench.serve_process(model, "faults-replica-1-restarted.log", "-t", "1", "--served-model-name", "m",
                                       "--kv-cache-mem", "0.05", port=port)
    events["restarted"] = time.monotonic()
    for thread in threads:
        thread.join()
    stop(router)
    for process in (replicas[0][0], replicas[2][0], restarted):
        stop(process)
    served_by = {}
    with open(os.path.join(bench.out, "faults-route.log")) as log:
        for line in log:
            if line.startswith("{") and '"request_id"' in line:
                entry = json.loads(line)
                served_by[entry["request_id"]] = entry.get("replica", "")
    report_faults(results, served_by, victim_url, events)


def report_faults(results, served_by, victim_url, events):
    whole = [r for r in results if not r[1]]
    streams = [r for r in results if r[1]]
    print(f"non-streaming: {len(whole)} requests, {sum(1 for r in whole if r[2] == 200)} answered 200, others: "
          f"{sorted(set(r[2] for r in whole if r[2] != 200))}")
    for name, on_victim in (("on the killed replica", True), ("on the others", False)):
        chosen = [r for r in streams if (served_by.get(r[0]) == victim_url) == on_victim]
        outcomes = {}
        for r in chosen:
            outcomes[r[3]] = outcomes.get(r[3], 0) + 1
        print(f"streams {name}: {len(chosen)}: {outcomes}")
    ejected = events.get("ejected", float("nan")) - events["killed"]
    rejoined = events.get("rejoined", float("nan")) - events["restarted"]
    print(f"ejected {ms(ejected)} ms after the SIGKILL; back in rotation {ms(rejoined)} ms after the restarted "
          "replica was ready (health interval 500 ms)")


def mean_logprob(answer):
    values = [v for v in answer["choices"][0]["logprobs"]["token_logprobs"] if v is not None]
    return statistics.mean(values) if values else 0.0


def twotier_serve(bench):
    """Two tiers of real replicas: the tiny synthetic model answers first, the small one when it is unsure. The
    threshold is the tiny model's median mean logprob on these prompts, so about half escalate."""
    tiny, small = synth(bench, "tiny"), synth(bench, "small")
    (small_process, small_url), = start_replicas(bench, tiny, "twotier-small", 1)
    (large_process, large_url), = start_replicas(bench, small, "twotier-large", 1)
    prompts = [f"Once upon a time {' '.join(random.Random(i).choice(WORDS) for _ in range(6))}" for i in range(200)]
    body = {"model": "m", "max_tokens": 16, "temperature": 0}
    try:
        probe = Client(small_url)
        scores = [mean_logprob(json.loads(probe.post("/v1/completions", {**body, "prompt": p, "logprobs": 1})[1]))
                  for p in prompts[:40]]
        threshold = statistics.median(scores)
        router, router_url = bench.route_process(
            f'[pools.small]\nbackends = ["{small_url}"]\n[pools.large]\nbackends = ["{large_url}"]\n'
            f'[models.m]\nsmall = "small"\nlarge = "large"\n'
            f'escalate = {{ below_mean_logprob = {threshold:.4f}, on_length = false }}\n'
            'prices = { small = 0.10, large = 1.00 }\n', "twotier-serve-route.log")
        try:
            client = Client(router_url)
            routed = [client.post("/v1/completions", {**body, "prompt": p}) for p in prompts]
            samples = metrics(router_url)
        finally:
            stop(router)
        direct = Client(large_url)
        large_only = [direct.post("/v1/completions", {**body, "prompt": p})[2] for p in prompts]
    finally:
        stop(small_process)
        stop(large_process)
    escalated = metric_sum(samples, 'tern_route:escalations_total{model="m"')
    actual = samples['tern_route:two_tier_cost_total{model="m",basis="actual"}']
    estimate = samples['tern_route:two_tier_cost_total{model="m",basis="large_only"}']
    print(f"threshold {threshold:.3f} (median mean logprob of the tiny model on 40 of the prompts); "
          f"{len(prompts)} requests, {sum(1 for r in routed if r[0] == 200)} answered 200, escalated {escalated:.0f} "
          f"({escalated / len(prompts):.1%})")
    print(f"cost per 1,000 requests at 0.10 / 1.00 per million tokens: {1000 * actual / len(prompts):.5f} against "
          f"large-only {1000 * estimate / len(prompts):.5f}: {1 - actual / estimate:.1%} saved")
    print(f"latency p50 ms: through two tiers {ms(percentile([r[2] for r in routed], 0.5))}, "
          f"large model alone {ms(percentile(large_only, 0.5))}")


def scenarios(bench):
    return {"affinity": lambda: affinity(bench), "faults": lambda: faults(bench),
            "twotier-serve": lambda: twotier_serve(bench)}

"""scripts/bench-route: tern route against fixture backends, measured through `tern bench serve`."""
import json
import os
import re
import signal
import subprocess
import sys
import time

BUILD = sys.argv[1]
TERN = os.path.join(BUILD, "tern")
FIXTURE = os.path.join(BUILD, "route_fixture_server")
OUT = os.path.join(BUILD, "bench-route")
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def start(words, log_name):
    """Starts a process that prints 'listening on http://HOST:PORT'; returns (process, url)."""
    log_path = os.path.join(OUT, log_name)
    log = open(log_path, "w")
    process = subprocess.Popen(words, stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        with open(log_path) as text:
            found = re.search(r"listening on (http://[0-9.]+:[0-9]+)", text.read())
        if found:
            return process, found.group(1)
        if process.poll() is not None:
            break
        time.sleep(0.05)
    raise SystemExit(f"{words[0]} did not start; see {log_path}")


def stop(process):
    process.send_signal(signal.SIGTERM)
    process.wait(timeout=30)


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def route_config(urls, policy="least_outstanding"):
    path = os.path.join(OUT, "route.toml")
    backends = ", ".join(f'"{url}"' for url in urls)
    with open(path, "w") as config:
        config.write(f"[listen]\nport = 0\nmax_connections = 20000\n[pools.main]\nbackends = [{backends}]\n"
                     f"policy = \"{policy}\"\n[models.fixture]\npool = \"main\"\n")
    return path


def bench(url, label, concurrency, prompts, output_len):
    result = os.path.join(OUT, f"{label}.json")
    subprocess.run([TERN, "bench", "serve", "--base-url", url, "--model", "fixture", "--num-prompts", str(prompts),
                    "--max-concurrency", str(concurrency), "--input-len", "16", "--output-len", str(output_len),
                    "--num-warmups", str(min(concurrency, 50)), "--no-progress", "--save-result", result],
                   check=True, stdout=subprocess.DEVNULL)
    with open(result) as saved:
        return json.load(saved)["runs"][0]  # the summary fields sit on the run


def overhead():
    fixture, fixture_url = start([FIXTURE, "--chunks-per-second", "50"], "overhead-fixture.log")
    router, router_url = start([TERN, "route", "--config", route_config([fixture_url])], "overhead-route.log")
    try:
        direct = bench(fixture_url, "overhead-direct", 200, 2000, 16)
        before = cpu_seconds(router.pid)
        routed = bench(router_url, "overhead-route", 200, 2000, 16)
        router_cpu = cpu_seconds(router.pid) - before
        chunks = routed["total_output_tokens"] + routed["completed"]  # every token's chunk and each [DONE]
        print("| | direct | through tern route | added |")
        print("| --- | ---: | ---: | ---: |")
        for name in ("median_ttft_ms", "p99_ttft_ms", "median_e2el_ms", "p99_e2el_ms"):
            print(f"| {name} | {direct[name]:.2f} | {routed[name]:.2f} | {routed[name] - direct[name]:+.2f} |")
        print(f"| completed / failed | {direct['completed']} / {direct['failed']} | "
              f"{routed['completed']} / {routed['failed']} | |")
        print(f"router CPU: {router_cpu:.2f} s for {chunks} relayed events: {1e6 * router_cpu / chunks:.1f} us each")
    finally:
        stop(router)
        stop(fixture)


def parallel():
    fixtures = [start([FIXTURE, "--chunks-per-second", "50", "--max-concurrency", "8"], f"parallel-fixture-{i}.log")
                for i in range(8)]
    try:
        one = bench(fixtures[0][1], "parallel-one", 8, 160, 64)
        router, router_url = start([TERN, "route", "--config", route_config([url for _, url in fixtures])],
                                   "parallel-route.log")
        try:
            eight = bench(router_url, "parallel-eight", 64, 1280, 64)
        finally:
            stop(router)
        ratio = eight["output_throughput"] / (8 * one["output_throughput"])
        print(f"one replica: {one['output_throughput']:.0f} tokens/s ({one['failed']} failed); "
              f"8 through the router: {eight['output_throughput']:.0f} tokens/s ({eight['failed']} failed): "
              f"{ratio:.3f} x 8 x one")
    finally:
        for process, _ in fixtures:
            stop(process)


for scenario in sys.argv[2:]:
    print(f"== {scenario}")
    {"overhead": overhead, "parallel": parallel}[scenario]()

"""Hostile clients against a running `tern serve` (driven by scripts/bench-hostile).

usage: hostile.py URL SERVER_PID SCENARIO...

While each scenario runs, a separate process probes /health every 20 ms on a fresh connection and sends small
completions back to back (a normal client), so that the hostile clients' event loop does not delay the probe.
Prints one Markdown row per scenario: /health latency p50 / p99 / max and failures, the normal client's answers,
the server's resident memory before and at its peak, and what the hostile clients saw.
"""
import asyncio
import json
import multiprocessing
import os
import resource
import socket
import sys
import threading
import time

from server_stats import metric, percentile, rss_mib


def http_exchange(host, port, request, timeout):
    """Sends `request` on a fresh connection and returns the status code (0 when none came)."""
    with socket.create_connection((host, port), timeout=timeout) as conn:
        conn.sendall(request)
        data = b""
        while b"\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk:
                break
            data += chunk
        while conn.recv(65536):
            pass
    parts = data.split(b" ", 2)
    return int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0


def observer(host, port, stop, queue):
    """The probe and the normal client, in their own process: (health latencies, health failures, the normal
    client's (status, milliseconds))."""
    latencies, failures, statuses = [], 0, []
    health = b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    body = json.dumps({"prompt": "Once upon a time", "max_tokens": 8, "temperature": 0}).encode()
    completion = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Connection: close\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)

    def normal_client():
        while not stop.is_set():
            start = time.perf_counter()
            try:
                status = http_exchange(host, port, completion, 30)
            except OSError:
                status = 0
            statuses.append((status, (time.perf_counter() - start) * 1000))

    client = threading.Thread(target=normal_client)
    client.start()
    while not stop.is_set():
        start = time.perf_counter()
        try:
            ok = http_exchange(host, port, health, 5) == 200
        except OSError:
            ok = False
        latencies.append((time.perf_counter() - start) * 1000)
        failures += 0 if ok else 1
        time.sleep(0.02)
    client.join()
    queue.put((latencies, failures, statuses))


async def slowloris(host, port, seconds, count=500):
    """Connections that send their headers a byte a second; returns how many the server closed, and when."""
    closed_at = []
    start = time.monotonic()

    async def one():
        reader, writer = await asyncio.open_connection(host, port)
        message = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100
        try:
            for byte in message:
                if time.monotonic() - start > seconds:
                    return
                writer.write(bytes([byte]))
                await writer.drain()
                try:
                    if await asyncio.wait_for(reader.read(1024), 1.0) == b"":
                        closed_at.append(time.monotonic() - start)
                        return
                except asyncio.TimeoutError:
                    pass
        except OSError:
            closed_at.append(time.monotonic() - start)
        finally:
            writer.close()

    await asyncio.gather(*(one() for _ in range(count)), return_exceptions=True)
    if not closed_at:
        return f"{count} connections, none closed within {seconds} s"
    return (f"{count} connections; {len(closed_at)} closed by the server, after "
            f"{min(closed_at):.0f}-{max(closed_at):.0f} s")


async def idle(host, port, seconds, count=10000):
    """Keep-alive connections that send one request and then nothing; returns how many were held open."""
    request = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    writers, failed = [], 0
    for batch_start in range(0, count, 500):
        async def one():
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(request)
            await writer.drain()
            await asyncio.wait_for(reader.readuntil(b"ok"), 10)
            return writer
        results = await asyncio.gather(*(one() for _ in range(min(500, count - batch_start))), return_exceptions=True)
        writers += [result for result in results if not isinstance(result, BaseException)]
        failed += sum(1 for result in results if isinstance(result, BaseException))
    opened = len(writers)
    await asyncio.sleep(max(0.0, seconds - 5))
    for writer in writers:
        writer.close()
    return f"{opened} of {count} connections opened and held idle ({failed} failed)"


def status_of(answer):
    return answer.split(b" ", 2)[1].decode() if answer.count(b" ") >= 2 else "none"


async def read_status(reader, writer, wait):
    """The status code of the answer on `reader` ("none" when none came in `wait` seconds); closes the connection."""
    answer = b""
    try:
        answer = await asyncio.wait_for(reader.read(4096), wait)
    except (asyncio.TimeoutError, OSError):
        pass
    writer.close()
    return status_of(answer)


async def repeat(seconds, count, one):
    """`count` clients each running `one` again and again for `seconds`; returns every result."""
    deadline = time.monotonic() + seconds
    results = []

    async def client():
        while time.monotonic() < deadline:
            results.append(await one())

    await asyncio.gather(*(client() for _ in range(count)))
    return results


def tally(results, unit):
    """'413 x 12 (after 1-2 MiB sent)': each status, how often, and the range of what was sent before it."""
    by_status = {}
    for status, sent in results:
        by_status.setdefault(status, []).append(sent)
    return "; ".join(f"{status} x {len(sent)} (after {min(sent):.0f}-{max(sent):.0f} {unit} sent)"
                     for status, sent in sorted(by_status.items()))


async def body(host, port, seconds, count=4, size=1 << 30):
    """Clients announcing a 1 GB body and streaming it, again and again; returns the answers they read."""
    async def one():
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: " + str(size).encode() + b"\r\n\r\n")
        chunk, sent, answer = b"0" * (1 << 20), 0, b""
        try:
            while sent < size and not answer:
                writer.write(chunk)
                await writer.drain()
                sent += len(chunk)
                try:
                    answer = await asyncio.wait_for(reader.read(4096), 0.001)
                except asyncio.TimeoutError:
                    pass
        except OSError:
            pass
        status = status_of(answer) if answer else await read_status(reader, writer, 2)
        writer.close()
        return status, sent / (1 << 20)

    return tally(await repeat(seconds, count, one), "MiB")


async def headers(host, port, seconds, count=4, num_headers=100000):
    """Clients sending requests with 100,000 headers, again and again; returns the answers they read."""
    async def one():
        reader, writer = await asyncio.open_connection(host, port)
        writer.write(b"GET /health HTTP/1.1\r\nHost: x\r\n")
        sent = 0
        try:
            for start in range(0, num_headers, 1000):
                writer.write(b"".join(b"X-H%d: v\r\n" % idx for idx in range(start, start + 1000)))
                await writer.drain()
                sent += 1000
            writer.write(b"\r\n")
            await writer.drain()
        except OSError:
            pass
        return await read_status(reader, writer, 5), sent

    return tally(await repeat(seconds, count, one), "headers")


async def unread(host, port, seconds, count=32, metrics_url=None):
    """Streamed completions whose clients never read; returns what the server did with them."""
    payload = json.dumps({"prompt": "Once upon a time", "max_tokens": 400, "ignore_eos": True, "stream": True,
                          "logprobs": 5, "temperature": 1.0}).encode()
    sockets = []
    for _ in range(count):
        conn = socket.socket()
        conn.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        conn.connect((host, port))
        conn.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: "
                     + str(len(payload)).encode() + b"\r\n\r\n" + payload)
        sockets.append(conn)
    await asyncio.sleep(seconds)
    running = metric(metrics_url, "tern:num_requests_running")
    for conn in sockets:
        conn.close()
    return f"{count} streams never read; {running:.0f} still running after {seconds} s"


async def overload(host, port, seconds, metrics_url=None, concurrency=800):
    """Ten times the server's capacity (bench-hostile starts it with 64 running + 16 queued) sending completions
    back to back; returns how many completed, how fast the excess got its 429, and the KV usage once it is over."""
    payload = json.dumps({"prompt": "Once upon a time", "max_tokens": 32, "ignore_eos": True}).encode()
    request = (b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
               b"Content-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload)
    results = []
    deadline = time.monotonic() + seconds

    async def worker():
        while time.monotonic() < deadline:
            start = time.perf_counter()
            try:
                reader, writer = await asyncio.open_connection(host, port)
                writer.write(request)
                answer = await asyncio.wait_for(reader.read(), 120)
                writer.close()
            except (OSError, asyncio.TimeoutError):
                answer = b""
            status = status_of(answer)
            results.append((status, (time.perf_counter() - start) * 1000))
            if status == "429":
                await asyncio.sleep(0.05)  # a client that backs off a little, as the OpenAI SDKs do

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    settle = time.monotonic() + 60
    while time.monotonic() < settle and (metric(metrics_url, "tern:num_requests_running") > 0 or
                                         metric(metrics_url, "tern:num_requests_waiting") > 0):
        await asyncio.sleep(0.1)
    kv_usage = metric(metrics_url, "tern:kv_cache_usage_perc")
    completed = sum(1 for status, _ in results if status == "200")
    rejected = [latency for status, latency in results if status == "429"]
    other = len(results) - completed - len(rejected)
    # Their 429 latencies include this process's own event loop, saturated by 800 clients: the normal client's
    # (another process) are the ones to quote.
    return (f"{concurrency} clients for {seconds} s: {completed} completed (200), {len(rejected)} answered 429, "
            f"{other} other; KV usage afterwards {kv_usage:.3f}")


SCENARIOS = {"slowloris": (slowloris, 40), "idle": (idle, 25), "body": (body, 20), "headers": (headers, 20),
             "unread": (unread, 20),
             "overload": (overload, int(os.environ.get("TERN_OVERLOAD_SECONDS", "300")))}


def run(url, pid, name):
    host, port = url.split("//")[1].split(":")
    port = int(port)
    scenario, seconds = SCENARIOS[name]
    stop, queue = multiprocessing.Event(), multiprocessing.Queue()
    probe = multiprocessing.Process(target=observer, args=(host, port, stop, queue))
    probe.start()
    rss_before = rss_mib(pid)
    rss_peak = [rss_before]
    sampling = threading.Event()

    def sample():
        while not sampling.is_set():
            rss_peak[0] = max(rss_peak[0], rss_mib(pid))
            time.sleep(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    kwargs = {"metrics_url": url} if name in ("unread", "overload") else {}
    outcome = asyncio.run(scenario(host, port, seconds, **kwargs))
    stop.set()
    latencies, failures, statuses = queue.get()
    probe.join()
    sampling.set()
    sampler.join()
    ok = sum(1 for status, _ in statuses if status == 200)
    rejected = [ms for status, ms in statuses if status == 429]
    normal = f"{ok} of {len(statuses)} 200"
    if rejected:
        normal += f", {len(rejected)} 429 in p50 {percentile(rejected, 0.5):.1f} / p99 {percentile(rejected, 0.99):.1f} ms"
    print(f"| {name} | {percentile(latencies, 0.5):.1f} / {percentile(latencies, 0.99):.1f} / "
          f"{max(latencies):.1f} ms ({len(latencies)} probes, {failures} failed) | {normal} | "
          f"{rss_before:.0f} / {rss_peak[0]:.0f} MiB | {outcome} |", flush=True)


def main():
    url, pid, names = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    print("| scenario | /health p50 / p99 / max | normal completions | server RSS before / peak | hostile clients saw |")
    print("| --- | --- | --- | --- | --- |")
    for name in names:
        if name not in SCENARIOS:
            sys.exit(f"unknown scenario '{name}'; choose from {', '.join(SCENARIOS)}")
        run(url, pid, name)
        time.sleep(2)


if __name__ == "__main__":
    main()

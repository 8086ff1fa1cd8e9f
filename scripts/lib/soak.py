"""Mixed load against a running `tern serve` for MINUTES, then checks that nothing leaked (driven by scripts/soak).

usage: soak.py URL SERVER_PID MINUTES CONCURRENCY

Each client loops over a mix: streamed completions (TTFT and TPOT measured here, as the user sees them), plain
completions, streams dropped after a few events, bad requests (expected 400), requests with a priority, all on
prompts that share one of four long prefixes. Every 10 s the server's resident memory is sampled. At the end the
server must go idle with its KV cache empty; the report compares the first and last sixth of the run.
"""
import asyncio
import json
import random
import sys
import time

from server_stats import metric, percentile, rss_mib

PREFIXES = [" ".join(f"{topic} story number {idx}, told again with care." for idx in range(24))
            for topic in ("A cat", "The sea", "Old trees", "A city")]
BAD_BODIES = [b'{"prompt": "hi", "max_tokens": -3}', b'{"prompt": "hi", "no_such_field": 1}', b'{"prompt": ',
              b'{"messages": "not a list"}']


class Soak:
    def __init__(self, host, port, seconds):
        self.host, self.port = host, port
        self.start = time.monotonic()
        self.deadline = self.start + seconds
        self.streams = []      # (seconds since start, ttft s, tpot s)
        self.statuses = {}     # kind -> {status: count}
        self.unexpected = []   # (kind, status, body excerpt)

    def count(self, kind, status, expected, body=b""):
        per_kind = self.statuses.setdefault(kind, {})
        per_kind[status] = per_kind.get(status, 0) + 1
        if status != expected:
            self.unexpected.append((kind, status, body[:200]))

    async def send(self, path, body):
        reader, writer = await asyncio.open_connection(self.host, self.port)
        writer.write(f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
                     f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
        head = await reader.readuntil(b"\r\n\r\n")
        return reader, writer, int(head.split(b" ", 2)[1])

    def prompt(self):
        return random.choice(PREFIXES) + f" Then request {random.randrange(1 << 30)} began:"

    async def stream(self, drop_after=None):
        body = json.dumps({"prompt": self.prompt(), "max_tokens": random.randint(16, 96), "stream": True,
                           "temperature": 0.8}).encode()
        sent = time.monotonic()
        reader, writer, status = await self.send("/v1/completions", body)
        times, done = [], False
        while status == 200:
            line = await reader.readline()
            if not line:
                break
            if line.startswith(b"data: "):
                if line.strip() == b"data: [DONE]":
                    done = True
                    break
                times.append(time.monotonic())
                if drop_after is not None and len(times) >= drop_after:
                    break
        writer.close()
        kind = "dropped stream" if drop_after is not None else "stream"
        finished = done or drop_after is not None
        self.count(kind, status if status != 200 or finished else "no [DONE]", 200)
        if drop_after is None and len(times) >= 2:
            self.streams.append((sent - self.start, times[0] - sent, (times[-1] - times[0]) / (len(times) - 1)))

    async def plain(self, priority=None):
        fields = {"prompt": self.prompt(), "max_tokens": random.randint(8, 64), "temperature": 0.8}
        if priority is not None:
            fields["priority"] = priority
        reader, writer, status = await self.send("/v1/completions", json.dumps(fields).encode())
        rest = await reader.read()
        writer.close()
        self.count("priority" if priority is not None else "plain", status, 200, rest)

    async def bad(self):
        reader, writer, status = await self.send("/v1/completions", random.choice(BAD_BODIES))
        rest = await reader.read()
        writer.close()
        self.count("bad request", status, 400, rest)

    async def client(self):
        while time.monotonic() < self.deadline:
            choice = random.random()
            try:
                if choice < 0.40:
                    await self.stream()
                elif choice < 0.65:
                    await self.plain()
                elif choice < 0.75:
                    await self.stream(drop_after=random.randint(1, 4))
                elif choice < 0.85:
                    await self.bad()
                else:
                    await self.plain(priority=random.randint(-5, 5))
            except (OSError, asyncio.IncompleteReadError, ValueError) as error:
                self.count("transport", repr(error)[:60], "none")


async def sample_rss(pid, deadline, samples, start):
    while time.monotonic() < deadline:
        samples.append((time.monotonic() - start, rss_mib(pid)))
        await asyncio.sleep(10)


async def run(url, pid, seconds, concurrency):
    host, port = url.split("//")[1].split(":")
    soak = Soak(host, int(port), seconds)
    rss = []
    await asyncio.gather(sample_rss(pid, soak.deadline, rss, soak.start),
                         *(soak.client() for _ in range(concurrency)))
    return soak, rss


def window(streams, begin, end, index):
    return [row[index] for row in streams if begin <= row[0] < end]


def main():
    url, pid, minutes, concurrency = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
    seconds = minutes * 60
    soak, rss = asyncio.run(run(url, pid, seconds, concurrency))
    settle = time.monotonic() + 60
    while time.monotonic() < settle and (metric(url, "tern:num_requests_running") > 0 or
                                         metric(url, "tern:num_requests_waiting") > 0):
        time.sleep(0.2)
    kv_usage = metric(url, "tern:kv_cache_usage_perc")
    preemptions = metric(url, "tern:num_preemptions_total")
    running = metric(url, "tern:num_requests_running") + metric(url, "tern:num_requests_waiting")
    sixth = seconds / 6
    warm = [mib for at, mib in rss if at >= sixth]
    drift = 100 * (warm[-1] - warm[0]) / warm[0] if len(warm) >= 2 else float("nan")
    rows = []
    for label, index in (("TTFT", 1), ("TPOT", 2)):
        # Every sixth, not only the first and last: how much the middle ones differ is this machine's own noise.
        by_sixth = [percentile(window(soak.streams, part * sixth, (part + 1) * sixth, index), 0.99)
                    for part in range(6)]
        first, last = by_sixth[0], by_sixth[-1]
        rows.append(f"p99 {label} first / last sixth: {first * 1000:.1f} / {last * 1000:.1f} ms "
                    f"({100 * (last - first) / first:+.1f}%); by sixth: "
                    + " / ".join(f"{value * 1000:.1f}" for value in by_sixth) + " ms")
    server_errors = sum(count for per_kind in soak.statuses.values() for status, count in per_kind.items()
                        if isinstance(status, int) and status >= 500)
    print(f"{minutes:g} minutes, {concurrency} clients; requests by kind and status: {json.dumps(soak.statuses)}")
    print(f"RSS after the first sixth: {warm[0] if warm else float('nan'):.1f} MiB, at the end "
          f"{warm[-1] if warm else float('nan'):.1f} MiB: drift {drift:+.2f}% (max {max(warm or [0]):.1f} MiB)")
    for row in rows:
        print(row)
    print(f"preemptions: {preemptions:.0f}; after the load: {running:.0f} requests running or waiting, "
          f"KV usage {kv_usage:.4f}; "
          f"5xx answers: {server_errors}; unexpected answers: {len(soak.unexpected)}")
    for kind, status, body in soak.unexpected[:5]:
        print(f"  unexpected: {kind} got {status}: {body!r}")
    ok = kv_usage == 0 and running == 0 and server_errors == 0 and not soak.unexpected
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()

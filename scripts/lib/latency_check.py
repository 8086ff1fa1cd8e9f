#!/usr/bin/env python3
"""Latency as the client sees it against the server's own figures (scripts/bench-latency).

  latency_check.py socket PORT CONCURRENCY NUM_REQUESTS INPUT_LEN OUTPUT_LEN OUT.json
      A plain socket client (no HTTP library): NUM_REQUESTS streaming /v1/completions with token-id prompts, at most
      CONCURRENCY at once, each on its own connection; records per request the response id, the time from the last
      byte sent to the first token, and every gap between token-carrying events, from recv() timestamps.
  latency_check.py compare SERVER_LOG FROM_LINE CLIENT.json KIND
      Reads `tern serve`'s per-request log lines (JSON on stderr) after FROM_LINE and the client's records (KIND
      socket: this script's; bench: `tern bench serve --save-result`), and prints one Markdown row: client and server
      TTFT p50 / p99, the client's inter-token gaps p50 / p99 against the server's time per output token p50 / p99,
      and for the socket client (whose records carry the response id) the per-request differences client - server
      of TTFT and of each request's gap p50 and p99 (the server's log line has them: itl_p50_ms, itl_p99_ms).
"""
import json
import socket
import statistics
import sys
import threading
import time


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def one_request(port, prompt, output_len):
    body = json.dumps({"model": "m", "prompt": prompt, "max_tokens": output_len, "stream": True,
                       "ignore_eos": True, "temperature": 0}).encode()
    head = (f"POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    sock = socket.create_connection(("127.0.0.1", port))
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.sendall(head + body)
    sent = time.perf_counter()
    buffer, stamps, response_id = b"", [], None
    while True:
        data = sock.recv(65536)
        now = time.perf_counter()
        if not data:
            break
        buffer += data
        while b"\n\n" in buffer:
            event, buffer = buffer.split(b"\n\n", 1)
            line = event[event.find(b"data: "):] if b"data: " in event else b""
            if not line.startswith(b"data: ") or line == b"data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            response_id = response_id or chunk.get("id")
            if any(choice.get("text") for choice in chunk.get("choices", [])):
                stamps.append(now)
    sock.close()
    gaps = [(b - a) * 1000.0 for a, b in zip(stamps, stamps[1:])]
    return {"id": response_id, "ttft_ms": (stamps[0] - sent) * 1000.0 if stamps else None, "itl_ms": gaps,
            "tokens": len(stamps)}


def run_socket(port, concurrency, num_requests, input_len, output_len, out_path):
    records, lock, next_index = [], threading.Lock(), [0]

    def worker():
        while True:
            with lock:
                index = next_index[0]
                if index >= num_requests:
                    return
                next_index[0] += 1
            prompt = [1] + [(index * 31 + pos * 7) % 900 + 3 for pos in range(input_len - 1)]
            record = one_request(port, prompt, output_len)
            with lock:
                records.append(record)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    json.dump(records, open(out_path, "w"))


def server_lines(log_path, from_line):
    lines = []
    for number, text in enumerate(open(log_path, errors="replace")):
        if number < from_line or not text.startswith("{"):
            continue
        try:
            line = json.loads(text)
        except ValueError:
            continue
        if line.get("event") == "request" and line.get("status") == 200:
            lines.append(line)
    return lines


def compare(log_path, from_line, client_path, kind):
    server = server_lines(log_path, from_line)
    if kind == "bench":
        saved = json.load(open(client_path))["runs"][0]
        client_ttft = [t * 1000.0 for t in saved["ttfts"] if t > 0]
        client_gaps = [g * 1000.0 for gaps in saved["itls"] for g in gaps]
        differences = ""
    else:
        records = [r for r in json.load(open(client_path)) if r["ttft_ms"] is not None]
        client_ttft = [r["ttft_ms"] for r in records]
        client_gaps = [g for r in records for g in r["itl_ms"]]
        by_id = {line.get("id"): line for line in server}
        matched = [(r, by_id[r["id"]]) for r in records if r["id"] in by_id and r["itl_ms"]]
        ttft_diff = [r["ttft_ms"] - line["ttft_ms"] for r, line in matched]
        # Each request's own gap percentiles, the client's less the server's (its log line's itl_p50/p99_ms).
        p50_diff = [percentile(r["itl_ms"], 50) - line.get("itl_p50_ms", float("nan")) for r, line in matched]
        p99_diff = [percentile(r["itl_ms"], 99) - line.get("itl_p99_ms", float("nan")) for r, line in matched]
        differences = "".join(f" | {percentile(d, 50):.2f} / {percentile(d, 99):.2f}"
                              for d in (ttft_diff, p50_diff, p99_diff))
    server_ttft = [line["ttft_ms"] for line in server]
    server_tpot = [line["tpot_ms"] for line in server]
    print(f"| {len(server)} | {percentile(client_ttft, 50):.2f} / {percentile(client_ttft, 99):.2f}"
          f" | {percentile(server_ttft, 50):.2f} / {percentile(server_ttft, 99):.2f}"
          f" | {percentile(client_gaps, 50):.2f} / {percentile(client_gaps, 99):.2f}"
          f" | {percentile(server_tpot, 50):.2f} / {percentile(server_tpot, 99):.2f}{differences or ' | | |'} |")


if __name__ == "__main__":
    if sys.argv[1] == "socket":
        run_socket(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]),
                   sys.argv[7])
    else:
        compare(sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5])

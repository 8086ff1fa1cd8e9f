#!/usr/bin/env python3
"""Time to first token after start, and resident memory, of one server process (tern serve or llama-server).

  startup_bench.py [--cold] [--ready-path PATH] --port P -- COMMAND...

Starts COMMAND (which must listen on 127.0.0.1:P), polls GET PATH (default /health, llama-server's readiness; tern
serve's is /ready, its /health being liveness) until it answers 200, sends one
non-streaming POST /v1/completions of 1 token, and prints one JSON line: seconds from the start to ready and to
the answer, and the process's VmRSS / VmHWM (MiB) once it has answered. --cold drops the page cache first (needs
root; says so and exits 2 where the machine refuses). The process is stopped before exiting.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request


def drop_page_cache():
    os.sync()
    try:
        with open("/proc/sys/vm/drop_caches", "w") as control:
            control.write("1\n")
    except OSError as error:
        sys.exit(f"--cold: cannot drop the page cache here ({error})")


def answered(url, body=None, timeout=600.0):
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            response.read()
            return response.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return False


def memory_mib(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                fields[key] = int(value.split()[0]) / 1024
    return fields


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cold", action="store_true")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log", default=os.devnull)
    parser.add_argument("--ready-path", default="/health")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.cold:
        drop_page_cache()
    base = f"http://127.0.0.1:{args.port}"
    with open(args.log, "w") as log:
        start = time.monotonic()
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            while not answered(base + args.ready_path, timeout=2.0):
                if process.poll() is not None:
                    sys.exit(f"{command[0]} exited with {process.returncode} before it was ready (log: {args.log})")
                time.sleep(0.02)
            ready = time.monotonic() - start
            body = {"prompt": "Once upon a time", "max_tokens": 1, "temperature": 0}
            if not answered(base + "/v1/completions", body):
                sys.exit(f"{command[0]} did not answer the completion (log: {args.log})")
            first_token = time.monotonic() - start
            memory = memory_mib(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    print(json.dumps({"ready_s": ready, "first_token_s": first_token, "rss_mib": memory["VmRSS"],
                      "peak_rss_mib": memory["VmHWM"]}))


if __name__ == "__main__":
    main()

"""What the scenarios of scripts/bench-route share: processes, configs, HTTP calls, /metrics and percentiles."""
import hashlib
import http.client
import json
import os
import re
import signal
import subprocess
import time
import urllib.parse


class Bench:
    """Paths of one run: the build folder's tern, fixture and output folder."""

    def __init__(self, build):
        self.tern = os.path.join(build, "tern")
        self.fixture = os.path.join(build, "route_fixture_server")
        self.out = os.path.join(build, "bench-route")
        os.makedirs(self.out, exist_ok=True)

    def start(self, words, log_name, pattern=r"listening on (http://[0-9.]+:[0-9]+)(?=[^0-9])", seconds=60, cpus=None):
        """Starts a process (on `cpus`, a taskset list, if given) and waits for `pattern` (one group: its URL) in its
        output; returns (process, url). The pattern wants a character after the port: the log is read while it is
        written, and half a line would give half a port."""
        log_path = os.path.join(self.out, log_name)
        log = open(log_path, "w")
        pinned = ["taskset", "-c", cpus] if cpus else []
        process = subprocess.Popen([*pinned, *words], stdout=log, stderr=subprocess.STDOUT)
        for _ in range(int(seconds / 0.05)):
            with open(log_path) as text:
                found = re.search(pattern, text.read())
            if found:
                return process, found.group(1)
            if process.poll() is not None:
                break
            time.sleep(0.05)
        raise SystemExit(f"{words[0]} did not start; see {log_path}")

    def fixture_process(self, log_name, *flags, cpus=None):
        return self.start([self.fixture, *flags], log_name, cpus=cpus)

    def route_process(self, config_text, log_name, cpus=None):
        path = os.path.join(self.out, log_name.replace(".log", ".toml"))
        with open(path, "w") as config:
            config.write(config_text if "[listen]" in config_text else "[listen]\nport = 0\n" + config_text)
        return self.start([self.tern, "route", "--config", path], log_name, cpus=cpus)

    def serve_process(self, model, log_name, *flags, port=0):
        return self.start([self.tern, "serve", "-m", model, "--port", str(port), *flags], log_name,
                          pattern=r"ready on (http://[0-9.]+:[0-9]+)", seconds=120)

    def bench_serve(self, url, label, *flags, cpus=None):
        """`tern bench serve` against url (on `cpus` if given); returns the run's summary (its fields sit on the
        run)."""
        result = os.path.join(self.out, f"{label}.json")
        pinned = ["taskset", "-c", cpus] if cpus else []
        subprocess.run([*pinned, self.tern, "bench", "serve", "--base-url", url, "--no-progress", "--save-result", result,
                        *[str(flag) for flag in flags]], check=True, stdout=subprocess.DEVNULL)
        with open(result) as saved:
            return json.load(saved)["runs"][0]


def stop(process):
    """SIGTERM and wait (a fixture then prints its request count: fixture_requests)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    process.wait(timeout=60)


def fixture_requests(log_path):
    """The generation requests a stopped fixture received, from its last line."""
    with open(log_path) as log:
        found = re.findall(r"requests (\d+), cancelled (\d+)", log.read())
    return int(found[-1][0]) if found else -1


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def sha256_hex(text):
    return hashlib.sha256(text.encode()).hexdigest()


class Client:
    """One keep-alive HTTP/1.1 connection (what an SDK client holds), reopened when the server closes it."""

    def __init__(self, url, timeout=120):
        parsed = urllib.parse.urlparse(url)
        self.host, self.port, self.timeout = parsed.hostname, parsed.port, timeout
        self.connection = None

    def request(self, method, path, body=None, headers=None):
        """Returns (status, body bytes, seconds)."""
        payload = json.dumps(body).encode() if isinstance(body, (dict, list)) else body
        for attempt in range(2):
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=self.timeout)
            started = time.perf_counter()
            try:
                self.connection.request(method, path, body=payload,
                                        headers={"Content-Type": "application/json", **(headers or {})})
                reply = self.connection.getresponse()
                data = reply.read()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                self.connection.close()
                self.connection = None
                if attempt == 1:
                    raise
                continue
            elapsed = time.perf_counter() - started
            if reply.getheader("Connection", "").lower() == "close":
                self.connection.close()
                self.connection = None
            return reply.status, data, elapsed
        raise RuntimeError("unreachable")

    def post(self, path, body, headers=None):
        return self.request("POST", path, body, headers)


def metrics(url):
    """The router's or a replica's /metrics as {sample with labels: value}."""
    status, body, _ = Client(url).request("GET", "/metrics")
    samples = {}
    for line in body.decode().splitlines():
        if line and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            samples[name] = float(value)
    return samples


def metric_sum(samples, prefix):
    """The sum of every sample whose name (with labels) starts with `prefix`."""
    return sum(value for name, value in samples.items() if name.startswith(prefix))


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def ms(seconds):
    return f"{1000 * seconds:.3f}"

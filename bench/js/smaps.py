"""A process's memory as the JS benchmarks read it (run.py, multivu.py)."""


def rss_pss(pid):
    """RSS and PSS of process `pid` in KiB (/proc/PID/smaps_rollup), (None, None) when
    it has ended."""
    rss = pss = None
    try:
        for line in open(f"/proc/{pid}/smaps_rollup"):
            if line.startswith("Rss:"):
                rss = int(line.split()[1])
            elif line.startswith("Pss:"):
                pss = int(line.split()[1])
    except FileNotFoundError:
        pass
    return rss, pss

#!/usr/bin/env python3
"""Latency on the wire, from a loopback capture of HTTP/1.1 traffic to one port.

Reads a classic pcap file (tcpdump -w; link type loopback/Ethernet, Linux cooked or
raw IP) and pairs each request with its response on every TCP connection: with
HTTP/1.1 keep-alive a connection carries one request at a time, so on each connection
a request starts with the client's first data packet after the previous response, and
its response ends with the server's last data packet before the next request (or the
connection's end). A request's wire time runs from its first packet leaving the client
to its response's last packet. The request line names the endpoint, mapped to the
method + `name` tag the tools report (`/assets/*`, `/groups/{g}/notes`, ...).
A WebSocket upgrade (`GET /ws`) ends the pairing on its connection (frames follow).

Usage: wire.py CAPTURE.pcap PORT [--json]   prints count, p50, p95, p99 (ms) per endpoint.
"""
import json
import re
import struct
import sys

# Link types: Ethernet, raw IP (101 and 12), Linux cooked (113), Linux cooked v2 (276),
# BSD loopback (0).
LINK_OFFSET = {1: 14, 101: 0, 12: 0, 113: 16, 276: 20, 0: 4}

# The name tag of each path, as the plugins and k6 scripts tag their requests.
NAMES = [
    (re.compile(r"^/assets/[^/]+$"), "/assets/*"),
    (re.compile(r"^/groups/[^/]+/notes$"), "/groups/{g}/notes"),
    (re.compile(r"^/groups/[^/]+/notes/[^/]+$"), "/groups/{g}/notes/{id}"),
    (re.compile(r"^/groups/[^/]+/search$"), "/groups/{g}/search"),
    (re.compile(r"^/commands/[^/]+$"), "/commands/{id}"),
]


def endpoint(method, target):
    """The method + name tag of a request line's target."""
    path = target.split("?", 1)[0]
    for pattern, name in NAMES:
        if pattern.match(path):
            return f"{method} {name}"
    return f"{method} {path}"


def packets(path):
    """(time in s, src port, dst port, TCP flags, payload length, first payload bytes)
    of each IPv4/IPv6 TCP packet of a pcap file."""
    with open(path, "rb") as f:
        header = f.read(24)
        magic = struct.unpack("<I", header[:4])[0]
        if magic in (0xA1B2C3D4, 0xA1B23C4D):
            endian = "<"
        elif magic in (0xD4C3B2A1, 0x4D3CB2A1):
            endian = ">"
        else:
            sys.exit(f"{path}: not a pcap file (magic {magic:#x}); capture with tcpdump -w")
        nano = magic in (0xA1B23C4D, 0x4D3CB2A1)
        link = struct.unpack(endian + "I", header[20:24])[0] & 0x0FFFFFFF
        if link not in LINK_OFFSET:
            sys.exit(f"{path}: link type {link} not handled; capture on lo")
        offset = LINK_OFFSET[link]
        while True:
            rec = f.read(16)
            if len(rec) < 16:
                return
            sec, frac, caplen, _ = struct.unpack(endian + "IIII", rec)
            data = f.read(caplen)
            t = sec + frac / (1e9 if nano else 1e6)
            ip = data[offset:]
            if not ip:
                continue
            version = ip[0] >> 4
            if version == 4:
                ihl = (ip[0] & 0x0F) * 4
                total = struct.unpack("!H", ip[2:4])[0]
                if ip[9] != 6:
                    continue
                tcp = ip[ihl:]
                ip_payload = total - ihl
            elif version == 6:
                if ip[6] != 6:
                    continue
                tcp = ip[40:]
                ip_payload = struct.unpack("!H", ip[4:6])[0]
            else:
                continue
            if len(tcp) < 20:
                continue
            sport, dport = struct.unpack("!HH", tcp[:4])
            doff = (tcp[12] >> 4) * 4
            flags = tcp[13]
            yield t, sport, dport, flags, ip_payload - doff, tcp[doff:]


class Conn:
    """One TCP connection's requests, paired in order."""

    def __init__(self):
        # [endpoint, first request packet, last response packet, first response packet]
        self.current = None
        self.upgraded = False
        self.done = []

    def client_data(self, t, head):
        if self.upgraded:
            return
        if self.current is not None and self.current[2] is None:
            return  # more of the same request (its body, or a long head)
        self.finish()
        line = head.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        if len(parts) < 3 or not parts[2].startswith("HTTP/"):
            # A packet that is not a request line: a request cut by the snaplen, or not
            # HTTP at all; counted apart by the caller.
            self.current = ["?", t, None, None]
            return
        name = endpoint(parts[0], parts[1])
        self.current = [name, t, None, None]
        if name == "GET /ws":
            self.upgraded = True  # frames follow: no more pairing here

    def server_data(self, t):
        if self.current is not None and not self.upgraded:
            self.current[2] = t
            if self.current[3] is None:
                self.current[3] = t

    def finish(self):
        if self.current is not None and self.current[2] is not None:
            self.done.append(tuple(self.current))
        self.current = None


def pair(path, port):
    """Every answered request of the capture: (endpoint, start s, end s, first response
    packet s)."""
    conns = {}
    for t, sport, dport, flags, length, head in packets(path):
        if dport == port:
            key, from_client = sport, True
        elif sport == port:
            key, from_client = dport, False
        else:
            continue
        if from_client and flags & 0x02 and not flags & 0x10:
            # A new SYN on a reused client port: a new connection.
            if key in conns:
                conns[key].finish()
                conns.setdefault("closed", []).append(conns.pop(key))
            conns[key] = Conn()
            continue
        conn = conns.setdefault(key, Conn())
        if length <= 0:
            continue
        if from_client:
            conn.client_data(t, head)
        else:
            conn.server_data(t)
    out = []
    for key, conn in conns.items():
        for c in conn if key == "closed" else [conn]:
            c.finish()
            out.extend(c.done)
    return sorted(out, key=lambda r: r[1])


def percentile(sorted_values, p):
    """k6's percentile: linear interpolation between the closest ranks."""
    if not sorted_values:
        return 0.0
    k = (len(sorted_values) - 1) * p / 100
    lo = int(k)
    hi = min(lo + 1, len(sorted_values) - 1)
    return sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (k - lo)


def summary(path, port):
    """{endpoint: (count, p50, p95, p99)} in ms."""
    by = {}
    for name, start, end, _ in pair(path, port):
        by.setdefault(name, []).append((end - start) * 1000)
    out = {}
    for name, values in by.items():
        values.sort()
        out[name] = (len(values), percentile(values, 50), percentile(values, 95), percentile(values, 99))
    return out


def phases(path, port):
    """k6's phases as the wire sees them, over every request, in ms:
    {"waiting": (p50, p95), "receiving": (p50, p95)}: waiting from the request's first
    packet to the response's first, receiving from there to the response's last."""
    waiting, receiving = [], []
    for _, start, end, first in pair(path, port):
        waiting.append((first - start) * 1000)
        receiving.append((end - first) * 1000)
    out = {}
    for name, values in (("waiting", waiting), ("receiving", receiving)):
        values.sort()
        out[name] = (percentile(values, 50), percentile(values, 95))
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    result = summary(sys.argv[1], int(sys.argv[2]))
    if "--json" in sys.argv:
        print(json.dumps({k: list(v) for k, v in result.items()}, indent=1))
        return
    for name in sorted(result, key=lambda n: (n.split(" ", 1)[1], n)):
        n, p50, p95, p99 = result[name]
        print(f"{name:32} {n:6} {p50:9.3f} {p95:9.3f} {p99:9.3f}")


if __name__ == "__main__":
    main()

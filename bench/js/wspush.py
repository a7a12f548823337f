#!/usr/bin/env python3
"""A WebSocket server that pushes text messages at a fixed rate to every socket, for
measuring what receiving a message costs a client (bench/js/wsrecv.py).

Each socket gets RATE messages a second (sent in bursts every 10 ms), each a note
change like the demo target's live pushes (~190 bytes, `"type":"note.updated"`), from
the moment it connects until it closes. Client frames are read and answered (ping →
pong, close → close); text from the client (a subscription) is ignored. On SIGTERM or
SIGINT it prints one line: `sent N` (messages written to all sockets).

Usage: wspush.py PORT RATE
"""
import asyncio
import base64
import hashlib
import signal
import struct
import sys
import time

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
TICK = 0.01
sent = 0


def frame(opcode, payload):
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", 0x80 | opcode, n)
    elif n < 65536:
        head = struct.pack("!BBH", 0x80 | opcode, 126, n)
    else:
        head = struct.pack("!BBQ", 0x80 | opcode, 127, n)
    return head + payload


def message(n):
    body = ('{"type":"note.updated","group":1,"note":{"id":%d,"group":1,"title":"edited",'
            '"body":"written by capacity","version":2,"updated_at":"2026-12-04T12:00:00Z"},'
            '"at_ms":%d}' % (n, int(time.time() * 1000)))
    return frame(1, body.encode())


async def read_frames(reader, writer, done):
    """Answers the client's pings and close; returns when the client closes or goes."""
    try:
        while True:
            b0, b1 = await reader.readexactly(2)
            n = b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", await reader.readexactly(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", await reader.readexactly(8))
            mask = await reader.readexactly(4) if b1 & 0x80 else b"\0\0\0\0"
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(await reader.readexactly(n)))
            opcode = b0 & 0x0F
            if opcode == 9:
                writer.write(frame(10, data))
            elif opcode == 8:
                done.set()
                writer.write(frame(8, data[:2]))
                await writer.drain()
                return
    except (asyncio.IncompleteReadError, ConnectionError):
        done.set()


async def serve(reader, writer, rate):
    global sent
    head = await reader.readuntil(b"\r\n\r\n")
    key = b""
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"sec-websocket-key:"):
            key = line.split(b":", 1)[1].strip()
    accept = base64.b64encode(hashlib.sha1(key + GUID).digest())
    writer.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                 b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept + b"\r\n\r\n")
    done = asyncio.Event()
    reading = asyncio.ensure_future(read_frames(reader, writer, done))
    owed = 0.0
    n = 0
    try:
        while not done.is_set():
            await asyncio.sleep(TICK)
            owed += rate * TICK
            burst = int(owed)
            owed -= burst
            if done.is_set():
                break
            for _ in range(burst):
                writer.write(message(n))
                n += 1
            sent += burst
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        reading.cancel()
        writer.close()


async def main():
    port, rate = int(sys.argv[1]), float(sys.argv[2])
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    server = await asyncio.start_server(lambda r, w: serve(r, w, rate), "127.0.0.1", port, backlog=1024)
    print("listening", flush=True)
    await stop.wait()
    server.close()
    print(f"sent {sent}", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    asyncio.run(main())

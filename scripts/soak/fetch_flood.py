#!/usr/bin/python3
"""One app floods sensorkitd with fetches it never acknowledges (docs/reliability.md, "Descriptors").

Usage: fetch_flood.py SOCKET APP CONNECTIONS FETCHES SECONDS

Opens CONNECTIONS connections as APP, starts FETCHES accelerometer fetches on each (window 1,
never acknowledged, so each stays running; whole stored chunks, the cheapest frames to make), reads whatever comes for SECONDS, then prints one
line: how many fetches started (a first batch came), how many were refused with error 103
(tooManyRequests), and how many connections were refused.
"""
import json
import select
import socket
import struct
import sys
import time


def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack("<I", len(body) + 1) + b"\x01" + body


def main():
    path, app = sys.argv[1], sys.argv[2]
    connections, fetches, seconds = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
    sockets = []
    refused_connections = 0
    for _ in range(connections):
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        requests = frame({"id": 1, "op": "hello", "v": 1, "app": app})
        for n in range(fetches):
            requests += frame({"id": 10 + n, "op": "fetch", "sensor": "com.apple.SensorKit.motion.accelerometer",
                               "from": 0, "to": 9000000000000000, "window": 1, "chunkFormats": [1, 2]})
        try:
            s.sendall(requests)
        except OSError:  # refused (error 103 without an id, then closed): the per-user limit
            refused_connections += 1
            s.close()
            continue
        s.setblocking(False)
        sockets.append(s)
    buffers = {s: b"" for s in sockets}
    started, refused = set(), 0
    end = time.time() + seconds
    while time.time() < end and buffers:
        readable, _, _ = select.select(list(buffers), [], [], 0.1)
        for s in readable:
            try:
                chunk = s.recv(1 << 20)
            except OSError:
                chunk = b""
            if not chunk:
                del buffers[s]
                continue
            buf = buffers[s] + chunk
            while len(buf) >= 5 and len(buf) >= 4 + struct.unpack("<I", buf[:4])[0]:
                size = struct.unpack("<I", buf[:4])[0]
                kind, payload, buf = buf[4], buf[5:4 + size], buf[4 + size:]
                if kind == 1:
                    reply = json.loads(payload)
                    code = (reply.get("error") or {}).get("code")
                    if code == 103 and reply.get("id") is None:
                        refused_connections += 1  # the daemon closes it next
                    elif code == 103:
                        refused += 1
                elif len(payload) >= 4:
                    started.add((id(s), struct.unpack("<I", payload[:4])[0]))  # a batch: its request id
            buffers[s] = buf
    print("fetches started: %d, fetches refused with error 103: %d, connections refused: %d"
          % (len(started), refused, refused_connections))
    sys.stdout.flush()


main()

#!/usr/bin/python3
"""Connection churn against sensorkitd's reader socket (docs/reliability.md, "Connection churn").

Usage: churn.py SOCKET COUNT [APP [KIND,KIND…]]

Opens COUNT connections one after another, cycling through the ways a client can leave:
  connect   connect, then close at once
  hello     send hello, close without reading the reply
  request   hello and a request, close before the replies
  queued    hello, pipeline 64 requests with replies of a few KiB, close without reading any
  refused   announce a frame larger than the daemon takes: the daemon replies, then closes
            (every fourth time the client reads the reply and the close)
  fetch     as APP (when given): hello and a fetch, close once the first bytes arrive
Prints one line: the connections made per kind, how many failed, and each failure's kind and
reason (errno name or timeout). A daemon that died shows as failures; the run stops after 50 in
a row.
"""
import errno
import json
import socket
import struct
import sys


def frame(obj):
    body = json.dumps(obj).encode()
    return struct.pack("<I", len(body) + 1) + b"\x01" + body


def read_reply(s):
    """Reads one whole frame (or returns at the end of the stream)."""
    buf = b""
    while len(buf) < 4 or len(buf) < 4 + struct.unpack("<I", buf[:4])[0]:
        chunk = s.recv(65536)
        if not chunk:
            return buf
        buf += chunk
    return buf


def main():
    path, count = sys.argv[1], int(sys.argv[2])
    app = sys.argv[3] if len(sys.argv) > 3 else None
    app = app or None  # "" : no app, to name kinds
    kinds = ["connect", "hello", "request", "queued", "refused"] + (["fetch"] if app else [])
    if len(sys.argv) > 4:
        kinds = [kind for kind in sys.argv[4].split(",") if kind in kinds]
    hello = frame({"id": 1, "op": "hello", "v": 1})
    app_hello = frame({"id": 1, "op": "hello", "v": 1, "app": app}) if app else b""
    status = frame({"id": 2, "op": "status"})
    sensors = frame({"id": 3, "op": "sensors"}) * 64
    oversized = b"\xff\xff\xff\x7f\x01"
    fetch = frame({"id": 4, "op": "fetch", "sensor": "com.apple.SensorKit.motion.accelerometer",
                   "from": 0, "to": 9000000000000000, "window": 64})
    made = dict.fromkeys(kinds, 0)
    failed = 0
    why = {}
    in_a_row = 0
    for i in range(count):
        kind = kinds[i % len(kinds)]
        s = socket.socket(socket.AF_UNIX)
        # Long enough for a daemon that shares two loaded cores with a whole test suite: a
        # timeout is a failure, and a slow answer is not what this counts.
        s.settimeout(30)
        try:
            s.connect(path)
            if kind == "hello":
                s.sendall(hello)
            elif kind == "request":
                s.sendall(hello + status)
            elif kind == "queued":
                s.sendall(hello + sensors)
            elif kind == "refused":
                s.sendall(oversized)
                if (i // len(kinds)) % 4 == 0:
                    read_reply(s)
            elif kind == "fetch":
                s.sendall(app_hello + fetch)
                s.recv(4096)
            made[kind] += 1
            in_a_row = 0
        except OSError as error:
            reason = "timeout" if isinstance(error, socket.timeout) else errno.errorcode.get(error.errno, str(error))
            key = "%s:%s" % (kind, reason)
            why[key] = why.get(key, 0) + 1
            failed += 1
            in_a_row += 1
            if in_a_row >= 50:
                break
        finally:
            s.close()
    print(" ".join("%s=%d" % (k, v) for k, v in made.items()) + " failed=%d" % failed
          + "".join(" %s=%d" % item for item in sorted(why.items())))
    sys.exit(1 if failed else 0)


main()

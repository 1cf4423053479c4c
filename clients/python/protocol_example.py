#!/usr/bin/env python3
"""The worked example of docs/protocol.md §10, built with this client's encoders.

Run it to print the annotated hex blocks that the document carries; the Swift test
(Tests/SensorKitModelTests/ProtocolDocExampleTests.swift) and test_protocol_codec.py decode the
same bytes, and both check that the document still contains them.
"""

import json
import struct

from sensorkit_client import ACCELEROMETER, encode_batch, encode_request, encode_frame, KIND_MESSAGE

APP = "org.example.study"
TIMELINE = {"anchor": 201_600_000_000_000, "boot": "3f2b8c1e-5d47-4a90-b6e1-0c9d2a7f4e13",
            "origin": 762_480_000_000_000_000}
FROM_NS = 291_600_000_000_000
TO_NS = 291_600_020_000_000
SENSOR_TIMES = [291_600_010_000_000, 291_600_020_000_000]
WRITE_TIMES = [291_600_512_000_000, 291_600_512_000_000]
XYZ = [[0.015625, 0.0078125], [-0.984375, -1.0], [0.125, 0.109375]]


def reply_frame(reply):
    """Replies as the daemon's JSONEncoder writes them: sorted keys, no spaces."""
    return encode_frame(KIND_MESSAGE, json.dumps(reply, sort_keys=True, separators=(",", ":")).encode())


MESSAGES = [
    ("hello-request", encode_request({"id": 1, "op": "hello", "v": 1, "app": APP})),
    ("hello-reply", reply_frame({"id": 1, "ok": True, "version": 1, "app": APP, "timeline": TIMELINE})),
    ("fetch-request", encode_request({"id": 2, "op": "fetch", "sensor": ACCELEROMETER, "device": "host",
                                      "from": FROM_NS, "to": TO_NS, "window": 8})),
    ("batch", encode_batch(2, 1, SENSOR_TIMES, WRITE_TIMES, XYZ)),
    ("ack", encode_request({"id": 0, "op": "ack", "target": 2, "batches": 1})),
    ("fetch-reply", reply_frame({"id": 2, "ok": True, "count": 2})),
]


def hexline(data):
    return " ".join("%02x" % b for b in data)


def annotate_message(frame):
    length, kind = struct.unpack_from("<IB", frame)
    lines = [(frame[0:4], "length %d = kind byte + %d payload bytes" % (length, length - 1)),
             (frame[4:5], "kind 1 = message (UTF-8 JSON)")]
    payload = frame[5:]
    for i in range(0, len(payload), 16):
        chunk = payload[i:i + 16]
        lines.append((chunk, chunk.decode("ascii")))
    return lines


def annotate_batch(frame):
    length, kind, request_id, layout, reserved, k, n = struct.unpack_from("<IBIBBHI", frame)
    lines = [(frame[0:4], "frame length %d = kind byte + %d-byte payload" % (length, length - 1)),
             (frame[4:5], "frame kind 2 = batch"),
             (frame[5:9], "payload +0   u32 request id = %d (the fetch's id)" % request_id),
             (frame[9:10], "payload +4   u8  layout = %d (motion: x, y, z)" % layout),
             (frame[10:11], "payload +5   u8  reserved, always 0"),
             (frame[11:13], "payload +6   u16 column count k = %d" % k),
             (frame[13:17], "payload +8   u32 sample count n = %d" % n)]
    offset = 17

    def values(fmt, label, items, describe):
        nonlocal offset
        for i, value in enumerate(items):
            lines.append((frame[offset:offset + 8], "payload +%-3d %s[%d] = %s" % (offset - 5, label, i, describe(value))))
            offset += 8

    values("q", "sensor time", SENSOR_TIMES, lambda v: "%d SR ns" % v)
    values("q", "write time ", WRITE_TIMES, lambda v: "%d SR ns" % v)
    for name, column in zip("xyz", XYZ):
        values("d", "column %s   " % name, column, lambda v: "%r g" % v)
    lines.append((frame[offset:offset + 4], "payload +%-3d u32 ragged count m = 0 (no ragged values follow)" % (offset - 5)))
    assert offset + 4 == len(frame)
    return lines


def render(name, frame):
    lines = annotate_batch(frame) if name == "batch" else annotate_message(frame)
    width = max(len(hexline(chunk)) for chunk, _ in lines)
    body = "\n".join("%-*s  # %s" % (width, hexline(chunk), note) for chunk, note in lines)
    return "```hex %s\n%s\n```" % (name, body)


if __name__ == "__main__":
    for name, frame in MESSAGES:
        print(render(name, frame))
        print()
        print("compact:", frame.hex())
        print()

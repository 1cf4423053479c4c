#!/usr/bin/env python3
"""Checks the Python client's framing, request encoding and batch decoding against the worked
example of docs/protocol.md §10 (the same hex the Swift test ProtocolDocExampleTests decodes), and
its request/ack/cancel behaviour against a scripted peer on a real Unix socket.

    python3 -m unittest -v clients/python/test_protocol_codec.py
"""

import json
import os
import random
import re
import socket
import struct
import tempfile
import threading
import unittest

import sensorkit_client as sk
from sensorkit_client import (ACCELEROMETER, FrameDecoder, ProtocolError, SensorKitClient, SensorKitError,
                              decode_batch, encode_batch, encode_frame, encode_request)

HELLO_REQUEST = "36000000017b22617070223a226f72672e6578616d706c652e7374756479222c226964223a312c226f70223a2268656c6c6f222c2276223a317d"
HELLO_REPLY = "a9000000017b22617070223a226f72672e6578616d706c652e7374756479222c226964223a312c226f6b223a747275652c2274696d656c696e65223a7b22616e63686f72223a3230313630303030303030303030302c22626f6f74223a2233663262386331652d356434372d346139302d623665312d306339643261376634653133222c226f726967696e223a3736323438303030303030303030303030307d2c2276657273696f6e223a317d"
FETCH_REQUEST = "91000000017b22646576696365223a22686f7374222c2266726f6d223a3239313630303030303030303030302c226964223a322c226f70223a226665746368222c2273656e736f72223a22636f6d2e6170706c652e53656e736f724b69742e6d6f74696f6e2e616363656c65726f6d65746572222c22746f223a3239313630303032303030303030302c2277696e646f77223a387d"
BATCH = "61000000020200000001000300020000008036036b3509010000cd9b6b350901000020ef88350901000020ef8835090100000000000000903f000000000000803f000000000080efbf000000000000f0bf000000000000c03f000000000000bc3f00000000"
ACK = "2b000000017b2262617463686573223a312c226964223a302c226f70223a2261636b222c22746172676574223a327d"
FETCH_REPLY = "1d000000017b22636f756e74223a322c226964223a322c226f6b223a747275657d"

BLOCKS = {"hello-request": HELLO_REQUEST, "hello-reply": HELLO_REPLY, "fetch-request": FETCH_REQUEST,
          "batch": BATCH, "ack": ACK, "fetch-reply": FETCH_REPLY}

FROM_NS, TO_NS = 291_600_000_000_000, 291_600_020_000_000
HERE = os.path.dirname(os.path.abspath(__file__))


def frames_of(data, pieces):
    decoder = FrameDecoder(sk.MAX_SERVER_FRAME)
    out, offset, i = [], 0, 0
    while offset < len(data):
        size = pieces[i % len(pieces)]
        decoder.feed(data[offset:offset + size])
        offset += size
        i += 1
        while True:
            frame = decoder.next()
            if frame is None:
                break
            out.append(frame)
    assert decoder.buffered == 0
    return out


class WorkedExampleTests(unittest.TestCase):
    def test_requests_encode_to_the_documented_bytes(self):
        self.assertEqual(encode_request({"id": 1, "op": "hello", "v": 1, "app": "org.example.study"}).hex(), HELLO_REQUEST)
        self.assertEqual(encode_request({"id": 2, "op": "fetch", "sensor": ACCELEROMETER, "device": "host",
                                         "from": FROM_NS, "to": TO_NS, "window": 8}).hex(), FETCH_REQUEST)
        self.assertEqual(encode_request({"id": 0, "op": "ack", "target": 2, "batches": 1}).hex(), ACK)

    def test_replies_decode(self):
        (kind, payload), = frames_of(bytes.fromhex(HELLO_REPLY), [1 << 20])
        self.assertEqual(kind, sk.KIND_MESSAGE)
        hello = json.loads(payload)
        self.assertEqual(hello["timeline"], {"anchor": 201600000000000, "boot": "3f2b8c1e-5d47-4a90-b6e1-0c9d2a7f4e13",
                                             "origin": 762480000000000000})
        self.assertEqual((hello["id"], hello["ok"], hello["version"], hello["app"]), (1, True, 1, "org.example.study"))
        (kind, payload), = frames_of(bytes.fromhex(FETCH_REPLY), [1 << 20])
        self.assertEqual(json.loads(payload), {"count": 2, "id": 2, "ok": True})

    def test_batch_decodes_to_two_accelerometer_samples(self):
        (kind, payload), = frames_of(bytes.fromhex(BATCH), [1 << 20])
        self.assertEqual(kind, sk.KIND_BATCH)
        self.assertEqual(len(payload), 96)
        batch = decode_batch(payload)
        self.assertEqual(batch["request_id"], 2)
        self.assertEqual((batch["layout"], batch["layout_name"], batch["count"]), (1, "motion", 2))
        self.assertEqual(batch["sensor_times"], [291_600_010_000_000, 291_600_020_000_000])
        self.assertEqual(batch["write_times"], [291_600_512_000_000, 291_600_512_000_000])
        self.assertEqual(batch["columns"], {"x": [0.015625, 0.0078125], "y": [-0.984375, -1.0], "z": [0.125, 0.109375]})
        self.assertEqual(batch["ragged"], [])
        again = encode_batch(2, 1, batch["sensor_times"], batch["write_times"],
                             [batch["columns"][c] for c in "xyz"])
        self.assertEqual(again.hex(), BATCH)

    def test_conversation_drip_fed_in_any_pieces(self):
        stream = b"".join(bytes.fromhex(h) for h in (HELLO_REPLY, BATCH, FETCH_REPLY))
        whole = frames_of(stream, [len(stream)])
        self.assertEqual([k for k, _ in whole], [1, 2, 1])
        self.assertEqual(frames_of(stream, [1]), whole)
        rng = random.Random(7)
        self.assertEqual(frames_of(stream, [rng.randint(1, 40) for _ in range(200)]), whole)

    def test_document_carries_exactly_these_bytes(self):
        with open(os.path.join(HERE, "..", "..", "docs", "protocol.md"), encoding="utf-8") as f:
            text = f.read()
        found = {}
        for name, body in re.findall(r"^```hex ([\w-]+)\n(.*?)^```", text, flags=re.M | re.S):
            found[name] = "".join(re.sub(r"\s", "", line.split("#", 1)[0]).lower() for line in body.splitlines())
        for name, hex_ in BLOCKS.items():
            self.assertEqual(found.get(name), hex_, "docs/protocol.md block %r" % name)

    def test_constants_are_the_documented_limits(self):
        with open(os.path.join(HERE, "..", "..", "docs", "protocol.md"), encoding="utf-8") as f:
            rows = [line for line in f.read().splitlines() if line.startswith("| ")]

        def numbers(limit):
            row = next(line for line in rows if line.startswith("| %s |" % limit))
            # "65 536" is one number (digit groups joined by one space); "default 8, 1…16" is three.
            return [int(n.replace(" ", "")) for n in re.findall(r"\d+(?: \d{3})*", row.split("|")[2])]

        self.assertEqual(numbers("protocol version"), [sk.PROTOCOL_VERSION])
        self.assertEqual(numbers("client frame (`length` field)"), [sk.MAX_CLIENT_FRAME])
        self.assertEqual(numbers("daemon frame (`length` field)"), [sk.MAX_SERVER_FRAME])
        self.assertEqual(numbers("samples per batch")[0], sk.SAMPLES_PER_BATCH)
        self.assertEqual(numbers("fetch window"), [sk.DEFAULT_FETCH_WINDOW, 1, sk.MAX_FETCH_WINDOW])
        self.assertEqual(numbers("running fetches per connection"), [sk.MAX_RUNNING_FETCHES])
        self.assertEqual(numbers("open requests per connection (fetches + waiting `requestAuthorization`)"),
                         [sk.MAX_OPEN_REQUESTS])

    def test_error_names_are_the_documented_table(self):
        with open(os.path.join(HERE, "..", "..", "docs", "protocol.md"), encoding="utf-8") as f:
            text = f.read()
        table = text.split("## 7. Errors", 1)[1].split("\n## ", 1)[0]
        documented = {int(code): name for code, name in re.findall(r"^\| (\d+) \| `(\w+)` \|", table, flags=re.M)}
        self.assertEqual(documented, sk.ERROR_NAMES)

    def test_example_generator_matches(self):
        import protocol_example
        self.assertEqual({name: frame.hex() for name, frame in protocol_example.MESSAGES}, BLOCKS)


class CodecErrorTests(unittest.TestCase):
    def heart_rate_payload(self):
        frame = encode_batch(3, 5, [1, 2], [3, 4], [[60, 61], [2, 3], [1, 2]], [0.8, 0.81, 0.79])
        return frame[5:]

    def test_heart_rate_ragged_values_split_by_count(self):
        batch = decode_batch(self.heart_rate_payload())
        self.assertEqual(batch["columns"]["rrCount"], [1.0, 2.0])
        self.assertEqual(sk.split_ragged(batch), [[0.8], [0.81, 0.79]])

    def test_photoplethysmogram_batches_carry_every_wide_frame_types_column(self):
        # Layout 15: ppg0…ppg19, ambient, status; a stream of PMD frame type 7 stores ppg0…ppg15
        # and status, so the rest are NaN (docs/protocol.md §5.2).
        names = ["ppg%d" % n for n in range(20)] + ["ambient", "status"]
        self.assertEqual(sk.LAYOUTS[15], ("photoplethysmogram", names))
        rows = [[float(1000 * c + s) if c < 16 else float("nan") for c in range(20)] + [float("nan"), float(0xABCDEF - s)]
                for s in range(3)]
        columns = [[row[c] for row in rows] for c in range(len(names))]
        times = [291_600_000_000_000 + 18_181_818 * s for s in range(3)]
        payload = encode_batch(4, 15, times, times, columns)[5:]
        self.assertEqual(len(payload), 12 + 16 * 3 + 8 * 3 * len(names) + 4)
        batch = decode_batch(payload)
        self.assertEqual((batch["layout"], batch["layout_name"], batch["count"]), (15, "photoplethysmogram", 3))
        self.assertEqual(batch["sensor_times"], times)
        self.assertEqual(list(batch["columns"]), names)
        for c, name in enumerate(names):
            for s in range(3):
                got, want = batch["columns"][name][s], rows[s][c]
                self.assertTrue(got == want or (got != got and want != want), "%s[%d]: %r, sent %r" % (name, s, got, want))

    def test_visits_identifier_words_come_back_as_the_places_uuid(self):
        # Layout 14's id0..id3: the UUID's bytes as four big-endian 32-bit words (docs/protocol.md §5.2).
        place = "6F1E0D2C-3B4A-8596-A7B8-C9DAEBFC0D1E"
        words = [float(int(place.replace("-", "")[8 * n:8 * n + 8], 16)) for n in range(4)]
        self.assertEqual(words[0], float(0x6F1E0D2C))
        hostile = [float("nan"), -1.0, float(2 ** 33), 1.5]
        columns = [[1200.0, 0.0], [-600000.0, -1000.0], [-540000.0, -1000.0], [-60000.0, -1000.0], [0.0, 0.0],
                   [2.0, 1.0]] + [[words[n], hostile[n]] for n in range(4)]
        times = [291_600_000_000_000, 291_600_001_000_000]
        batch = decode_batch(encode_batch(7, 14, times, times, columns)[5:])
        self.assertEqual(batch["layout_name"], "visits")
        ids = sk.visit_identifiers(batch)
        self.assertEqual(ids[0], place)
        # A damaged word reads 0; 1.5 is not a word either but truncates as Swift's UInt32(1.5) does.
        self.assertEqual(ids[1], "00000000-0000-0000-0000-000000000001")
        self.assertEqual(sk.SENSOR_NAMES["visits"], "com.apple.SensorKit.visits")
        self.assertEqual(sk.SENSOR_NAMES["phoneUsageReport"], "com.apple.SensorKit.phoneUsageReport")
        self.assertEqual(sk.SENSOR_NAMES["messagesUsageReport"], "com.apple.SensorKit.messagesUsageReport")

    def test_the_retired_five_column_photoplethysmogram_layout_is_unknown(self):
        # A daemon of this version never sends 8; one that did is not misread as layout 15.
        self.assertNotIn(8, sk.LAYOUTS)
        old = encode_batch(4, 8, [1], [1], [[1.0]] * 5)[5:]
        with self.assertRaisesRegex(ProtocolError, "layout 8"):
            decode_batch(old)

    def test_truncated_batches_are_rejected_at_every_length(self):
        payload = self.heart_rate_payload()
        for length in range(len(payload)):
            with self.assertRaises(ProtocolError):
                decode_batch(payload[:length])
        with self.assertRaises(ProtocolError):
            decode_batch(payload + b"\0")

    def test_unknown_layout_and_wrong_column_count(self):
        payload = bytearray(bytes.fromhex(BATCH)[5:])
        payload[4] = 200
        with self.assertRaisesRegex(ProtocolError, "layout 200"):
            decode_batch(bytes(payload))
        payload = bytearray(bytes.fromhex(BATCH)[5:])
        payload[6] = 4
        with self.assertRaisesRegex(ProtocolError, "columns"):
            decode_batch(bytes(payload))

    def test_hostile_count_fails_on_truncation(self):
        with self.assertRaises(ProtocolError):
            decode_batch(struct.pack("<IBBHI", 1, 1, 0, 3, 0xFFFFFFFF))

    def test_framing_errors(self):
        for data, pattern in ((struct.pack("<IB", 4097, 1), "limit"), (b"\0\0\0\0", "length 0"),
                              (struct.pack("<IB", 1, 9), "kind 9")):
            decoder = FrameDecoder(1024)
            decoder.feed(data)
            with self.assertRaisesRegex(ProtocolError, pattern):
                decoder.next()

    def test_oversized_request_is_refused_before_sending(self):
        with self.assertRaises(ValueError):
            encode_request({"id": 1, "op": "status", "sensor": "x" * sk.MAX_CLIENT_FRAME})


class ScriptedPeer:
    """A Unix-socket peer that plays the daemon's side from a script: a list of
    ("expect", hex) and ("send", hex) steps. Records what it received."""

    def __init__(self, steps):
        self.directory = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.directory.name, "sensorkitd.sock")
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(1)
        self.steps = steps
        self.failure = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            self.listener.settimeout(5)
            connection, _ = self.listener.accept()
            connection.settimeout(5)
            with connection:
                for action, hex_ in self.steps:
                    data = bytes.fromhex(hex_)
                    if action == "send":
                        connection.sendall(data)
                    else:
                        received = b""
                        while len(received) < len(data):
                            chunk = connection.recv(len(data) - len(received))
                            if not chunk:
                                raise AssertionError("client closed early")
                            received += chunk
                        if received != data:
                            raise AssertionError("expected %s, got %s" % (hex_, received.hex()))
        except Exception as error:  # reported by finish()
            self.failure = error

    def finish(self, test):
        self.thread.join(5)
        self.listener.close()
        self.directory.cleanup()
        test.assertIsNone(self.failure)


class ClientBehaviourTests(unittest.TestCase):
    def test_whole_worked_example_fetch(self):
        peer = ScriptedPeer([("expect", HELLO_REQUEST), ("send", HELLO_REPLY), ("expect", FETCH_REQUEST),
                             ("send", BATCH), ("expect", ACK), ("send", FETCH_REPLY)])
        with SensorKitClient(peer.path, timeout=5) as client:
            welcome = client.hello("org.example.study")
            self.assertEqual(welcome["timeline"]["anchor"], 201_600_000_000_000)
            batches = list(client.fetch(ACCELEROMETER, FROM_NS, TO_NS))
            self.assertEqual(client.last_fetch["count"], 2)
        peer.finish(self)
        self.assertEqual(len(batches), 1)
        self.assertEqual(batches[0]["columns"]["y"], [-0.984375, -1.0])

    def test_stopping_early_cancels_and_drains(self):
        cancel = encode_request({"id": 0, "op": "cancel", "target": 2}).hex()
        cancelled = encode_frame(1, json.dumps({"id": 2, "error": {"code": 108, "domain": "sensorkitd",
                                                                     "message": "fetch cancelled"}}).encode()).hex()
        status = encode_request({"id": 3, "op": "status"}).hex()
        status_reply = encode_frame(1, b'{"id":3,"ok":true,"states":[]}').hex()
        peer = ScriptedPeer([("expect", HELLO_REQUEST), ("send", HELLO_REPLY), ("expect", FETCH_REQUEST),
                             ("send", BATCH), ("send", BATCH), ("expect", cancel), ("send", cancelled),
                             ("expect", status), ("send", status_reply)])
        with SensorKitClient(peer.path, timeout=5) as client:
            client.hello("org.example.study")
            for batch in client.fetch(ACCELEROMETER, FROM_NS, TO_NS):
                break  # like a delegate returning false
            self.assertEqual(client.last_fetch["error"]["code"], 108)
            self.assertEqual(client.status(), [])  # the connection is still usable
        peer.finish(self)

    def test_unknown_layout_is_skipped_but_acknowledged(self):
        future = bytearray(bytes.fromhex(BATCH))
        future[9] = 77  # layout byte of a newer daemon
        peer = ScriptedPeer([("expect", HELLO_REQUEST), ("send", HELLO_REPLY), ("expect", FETCH_REQUEST),
                             ("send", bytes(future).hex()), ("expect", ACK), ("send", BATCH), ("expect", ACK),
                             ("send", FETCH_REPLY)])
        with SensorKitClient(peer.path, timeout=5) as client:
            client.hello("org.example.study")
            batches = list(client.fetch(ACCELEROMETER, FROM_NS, TO_NS))
        peer.finish(self)
        self.assertEqual([b["layout"] for b in batches], [1])

    def test_errors_and_events(self):
        refused = encode_frame(1, b'{"error":{"code":0,"domain":"SRErrorDomain","message":"not entitled"},"id":2}').hex()
        event = encode_frame(1, b'{"authorizationStatus":1,"event":"authorizationChanged","sensor":"s"}').hex()
        start = encode_request({"id": 2, "op": "startRecording", "sensor": "s"}).hex()
        peer = ScriptedPeer([("expect", HELLO_REQUEST), ("send", HELLO_REPLY), ("expect", start),
                             ("send", event), ("send", refused)])
        with SensorKitClient(peer.path, timeout=5) as client:
            client.hello("org.example.study")
            with self.assertRaises(SensorKitError) as caught:
                client.start_recording("s")
            self.assertEqual((caught.exception.code, caught.exception.name, caught.exception.domain),
                             (0, "invalidEntitlement", "SRErrorDomain"))
            self.assertEqual(client.next_event()["authorizationStatus"], 1)
        peer.finish(self)

    def test_consent_watch_events_read_with_its_reply_are_push_events(self):
        watch = encode_request({"id": 2, "op": "watchConsent"}).hex()
        reply = encode_frame(1, b'{"id":2,"ok":true}')
        pending = {"app": "org.example.study", "event": "consentPending", "sensors": [ACCELEROMETER], "target": 2}
        answered = dict(pending, sensors=[])
        # The reply and the first event in one write: the client reads them in one go.
        together = (reply + encode_frame(1, json.dumps(pending).encode())).hex()
        admin_hello = encode_request({"id": 1, "op": "hello", "v": 1}).hex()
        peer = ScriptedPeer([("expect", admin_hello), ("send", HELLO_REPLY), ("expect", watch),
                             ("send", together), ("send", encode_frame(1, json.dumps(answered).encode()).hex())])
        heard = []
        with SensorKitClient(peer.path, timeout=5, on_event=heard.append) as client:
            client.hello()
            self.assertEqual(client.watch_consent()["ok"], True)
            self.assertEqual(client.next_event(), pending)
            self.assertEqual(client.next_event(), answered)
        peer.finish(self)
        self.assertEqual(heard, [pending, answered])

    def test_live_subscription_yields_batches_and_events_and_ends_with_what_it_missed(self):
        subscribe = encode_request({"id": 2, "op": "subscribe", "sensor": ACCELEROMETER, "device": "host",
                                    "window": 8}).hex()
        subscribed = encode_frame(1, json.dumps({"event": "subscribed", "target": 2,
                                                 "sensor": ACCELEROMETER}).encode()).hex()
        gap = encode_frame(1, json.dumps({"event": "gap", "target": 2, "sensor": ACCELEROMETER, "missed": {
            "sensor": ACCELEROMETER, "device": "host", "from": 5, "to": 9, "reason": 4}}).encode()).hex()
        missed = {"sensor": ACCELEROMETER, "device": "host", "from": 10, "to": 99, "samples": 9}
        overrun = encode_frame(1, json.dumps({"id": 2, "error": {"code": 111, "domain": "sensorkitd",
                                                                   "message": "fell behind"},
                                              "missed": missed}).encode()).hex()
        peer = ScriptedPeer([("expect", HELLO_REQUEST), ("send", HELLO_REPLY), ("expect", subscribe),
                             ("send", subscribed), ("send", BATCH), ("send", gap), ("expect", ACK),
                             ("send", overrun)])
        got = []
        with SensorKitClient(peer.path, timeout=5) as client:
            client.hello("org.example.study")
            with self.assertRaises(SensorKitError) as caught:
                for item in client.subscribe(ACCELEROMETER, events=True):
                    got.append(item.get("event") or item["count"])
            self.assertEqual((caught.exception.code, caught.exception.name), (111, "overrun"))
            self.assertEqual(caught.exception.missed, missed)
        peer.finish(self)
        self.assertEqual(got, ["subscribed", 2, "gap"])



if __name__ == "__main__":
    unittest.main()

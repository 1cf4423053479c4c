#!/usr/bin/env python3
"""A dependency-free client for sensorkitd's reader protocol (docs/protocol.md).

Standard library only (socket, struct, json). One `SensorKitClient` is one connection; it is
synchronous and single-threaded: every call writes a request and reads frames until that request's
final reply arrives. Frames for other open requests (another fetch, a requestAuthorization that is
still waiting) are kept for them, push events are collected in `client.events`.

    from sensorkit_client import SensorKitClient, ACCELEROMETER

    with SensorKitClient("/run/sensorkit/sensorkitd.sock") as c:
        c.hello("org.example.study")               # app session (omit the app: admin session)
        c.request_authorization([ACCELEROMETER])    # waits until `sensorkitctl consent` answers
        c.start_recording(ACCELEROMETER)
        for batch in c.fetch(ACCELEROMETER, from_ns, to_ns):
            print(batch["sensor_times"], batch["columns"]["x"])

Every failure the daemon reports raises `SensorKitError` (`.code`, `.domain`, `.message`).
"""

import json
import math
import os
import socket
import struct
import sys
import time
import uuid
from collections import deque

# --- protocol constants (docs/protocol.md §2, §6) ---------------------------------------------

PROTOCOL_VERSION = 1
DEFAULT_SOCKET = "/run/sensorkit/sensorkitd.sock"
KIND_MESSAGE = 1
KIND_BATCH = 2
MAX_CLIENT_FRAME = 64 * 1024        # largest length field a client may send
MAX_SERVER_FRAME = 4 * 1024 * 1024  # largest length field the daemon sends
DEFAULT_FETCH_WINDOW = 8
MAX_FETCH_WINDOW = 16               # the daemon clamps a fetch's window to 1..16
MAX_RUNNING_FETCHES = 16            # per connection, each with its own id
MAX_OPEN_REQUESTS = 64              # per connection: fetches + waiting requestAuthorization
SAMPLES_PER_BATCH = 8192            # most samples in one batch frame

# Layout byte -> (name, column names)  (docs/protocol.md §5.2)
LAYOUTS = {
    1: ("motion", ["x", "y", "z"]),
    2: ("pressure", ["pressure", "temperature"]),
    3: ("ambientLight", ["lux", "chromaticityX", "chromaticityY", "placement"]),
    4: ("pedometer", ["endTime", "steps"]),
    5: ("heartRate", ["bpm", "confidence", "rrCount"]),
    6: ("wrist", ["onWrist", "wristLocation", "crownOrientation"]),
    7: ("electrocardiogram", ["microvolts", "lead", "flags", "frequency", "sessionStart"]),
    9: ("deletionRecords", ["endTime", "reason"]),
    10: ("keyboardMetrics", ["duration", "taps", "deletes", "words", "episodes", "pauses", "typingDuration", "typingSpeed"]),
    11: ("deviceUsage", ["entry", "duration", "screenWakes", "unlocks", "unlockDuration", "wakeSource", "unlockSource",
                         "category", "app0", "app1", "app2", "app3", "app4", "app5", "app6", "app7", "app8",
                         "usageTime", "textInputSessions", "relativeStartTime", "event", "events"]),
    12: ("phoneUsage", ["duration", "incomingCalls", "outgoingCalls", "callDuration", "uniqueContacts"]),
    13: ("messagesUsage", ["duration", "incomingMessages", "outgoingMessages", "uniqueContacts"]),
    14: ("visits", ["distance", "arrivalStart", "arrivalEnd", "departureStart", "departureEnd", "category",
                    "id0", "id1", "id2", "id3"]),
    # 8 was the five-column photoplethysmogram of earlier daemons; retired, never sent again.
    15: ("photoplethysmogram", ["ppg%d" % n for n in range(20)] + ["ambient", "status"]),
}

# Sensors with a Linux source (raw values are Apple's SRSensor strings).
ACCELEROMETER = "com.apple.SensorKit.motion.accelerometer"
ROTATION_RATE = "com.apple.SensorKit.motion.gyroscope"
AMBIENT_LIGHT = "com.apple.SensorKit.als"
AMBIENT_PRESSURE = "com.apple.SensorKit.ambientPressure"
PEDOMETER = "com.apple.SensorKit.pedometer.data"
HEART_RATE = "com.apple.SensorKit.heart.rate"
ON_WRIST = "com.apple.SensorKit.onWristState"
ECG = "com.apple.SensorKit.ECG"
PPG = "com.apple.SensorKit.PPG"
PHONE_USAGE = "com.apple.SensorKit.phoneUsageReport"
MESSAGES_USAGE = "com.apple.SensorKit.messagesUsageReport"
VISITS = "com.apple.SensorKit.visits"

SENSOR_NAMES = {
    "accelerometer": ACCELEROMETER, "rotationRate": ROTATION_RATE, "ambientLightSensor": AMBIENT_LIGHT,
    "ambientPressure": AMBIENT_PRESSURE, "pedometerData": PEDOMETER, "heartRate": HEART_RATE,
    "onWristState": ON_WRIST, "electrocardiogram": ECG, "photoplethysmogram": PPG,
    "phoneUsageReport": PHONE_USAGE, "messagesUsageReport": MESSAGES_USAGE, "visits": VISITS,
}


def deletion_records(sensor):
    """The deletion-record stream of a sensor (Apple's sr_sensorForDeletionRecordsFromSensor)."""
    return sensor + ".tombstones"


# Error codes (docs/protocol.md §7).
ERROR_NAMES = {
    0: "invalidEntitlement", 1: "noAuthorization", 2: "dataInaccessible", 3: "fetchRequestInvalid",
    4: "promptDeclined", 100: "malformedRequest", 101: "unsupportedVersion", 102: "unknownOperation",
    103: "tooManyRequests", 104: "notPermitted", 105: "unknownApp", 106: "unsupportedSensor",
    107: "internalError", 108: "cancelled", 109: "replyTooLarge", 110: "timedOut", 111: "overrun",
}


class SensorKitError(Exception):
    """An `error` reply: code (int), domain ("SRErrorDomain" for 0-4, else "sensorkitd"), message.
    `request_id` is None for connection-level errors (bad framing, unparsable request). `missed`
    is the final reply's range a live subscriber did not get (111 overrun): a dict with sensor,
    device, from, to (a fetch range, SR ns) and samples."""

    def __init__(self, code, domain, message, request_id=None, missed=None):
        super().__init__("%s %s (%s): %s" % (domain, code, ERROR_NAMES.get(code, "unknown"), message))
        self.code = code
        self.domain = domain
        self.message = message
        self.request_id = request_id
        self.missed = missed

    @property
    def name(self):
        return ERROR_NAMES.get(self.code, "unknown")


class ProtocolError(Exception):
    """The byte stream broke the protocol (bad framing, a malformed batch) or the socket closed."""


class UnknownLayoutError(ProtocolError):
    """A batch with a layout this client does not know (a newer daemon): skip it, but ack it."""

    def __init__(self, layout, request_id):
        super().__init__("unknown batch layout %d" % layout)
        self.layout = layout
        self.request_id = request_id


# --- pure codec -------------------------------------------------------------------------------

def encode_frame(kind, payload):
    """u32 little-endian length (kind byte + payload) . u8 kind . payload"""
    return struct.pack("<IB", len(payload) + 1, kind) + bytes(payload)


def encode_request(request):
    """A request dict as a message frame: compact JSON with sorted keys (what the Swift client
    sends, byte for byte, for ASCII strings)."""
    payload = json.dumps(request, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    if len(payload) + 1 > MAX_CLIENT_FRAME:
        raise ValueError("request of %d bytes exceeds the client frame limit" % len(payload))
    return encode_frame(KIND_MESSAGE, payload)


class FrameDecoder:
    """Cuts a byte stream into (kind, payload) frames whatever the read sizes. Pure."""

    def __init__(self, limit=MAX_SERVER_FRAME):
        self.limit = limit
        self._buffer = bytearray()

    @property
    def buffered(self):
        return len(self._buffer)

    def feed(self, data):
        self._buffer += data

    def next(self):
        """The next whole frame as (kind, payload bytes), or None when more bytes are needed."""
        if len(self._buffer) < 4:
            return None
        (length,) = struct.unpack_from("<I", self._buffer, 0)
        if length == 0:
            raise ProtocolError("frame length 0 (a frame holds at least its kind byte)")
        if length > self.limit:
            raise ProtocolError("frame of %d bytes exceeds the limit of %d" % (length, self.limit))
        if len(self._buffer) < 4 + length:
            return None
        kind = self._buffer[4]
        if kind not in (KIND_MESSAGE, KIND_BATCH):
            raise ProtocolError("unknown frame kind %d" % kind)
        payload = bytes(self._buffer[5:4 + length])
        del self._buffer[:4 + length]
        return kind, payload


BATCH_HEADER = struct.Struct("<IBBHI")  # request id, layout, reserved 0, column count, sample count


def decode_batch(payload):
    """Decodes a batch frame's payload into a dict:
    request_id, layout (int), layout_name, count, sensor_times [int SR ns], write_times [int SR ns],
    columns {name: [float]}, ragged [float]. Rejects short, long or inconsistent payloads."""
    if len(payload) < BATCH_HEADER.size:
        raise ProtocolError("batch truncated: %d bytes, header needs %d" % (len(payload), BATCH_HEADER.size))
    request_id, layout, _reserved, column_count, count = BATCH_HEADER.unpack_from(payload, 0)
    if layout not in LAYOUTS:
        raise UnknownLayoutError(layout, request_id)
    name, column_names = LAYOUTS[layout]
    if column_count != len(column_names):
        raise ProtocolError("layout %s has %d columns, batch says %d" % (name, len(column_names), column_count))
    offset = BATCH_HEADER.size

    def take(fmt, n):
        nonlocal offset
        size = struct.calcsize("<%d%s" % (n, fmt))
        if len(payload) - offset < size:
            raise ProtocolError("batch truncated: need %d bytes at offset %d, have %d" % (size, offset, len(payload) - offset))
        values = list(struct.unpack_from("<%d%s" % (n, fmt), payload, offset))
        offset += size
        return values

    sensor_times = take("q", count)
    write_times = take("q", count)
    columns = {column: take("d", count) for column in column_names}
    (ragged_count,) = take("I", 1)
    ragged = take("d", ragged_count)
    if offset != len(payload):
        raise ProtocolError("batch has %d trailing bytes" % (len(payload) - offset))
    return {
        "request_id": request_id, "layout": layout, "layout_name": name, "count": count,
        "sensor_times": sensor_times, "write_times": write_times, "columns": columns, "ragged": ragged,
    }


def encode_batch(request_id, layout, sensor_times, write_times, columns, ragged=()):
    """The inverse of decode_batch, returning a whole batch frame; `columns` in layout order."""
    n = len(sensor_times)
    payload = BATCH_HEADER.pack(request_id, layout, 0, len(columns), n)
    payload += struct.pack("<%dq" % n, *sensor_times) + struct.pack("<%dq" % n, *write_times)
    for column in columns:
        payload += struct.pack("<%dd" % n, *column)
    payload += struct.pack("<I", len(ragged)) + struct.pack("<%dd" % len(ragged), *ragged)
    return encode_frame(KIND_BATCH, payload)


def split_ragged(batch):
    """For heart-rate batches: the RR intervals (s) of each sample, split by the rrCount column."""
    counts = batch["columns"].get("rrCount")
    if counts is None:
        return [[] for _ in range(batch["count"])]
    out, offset = [], 0
    for count in counts:
        out.append(batch["ragged"][offset:offset + int(count)])
        offset += int(count)
    return out


def visit_identifiers(batch):
    """For visits batches (layout 14): each visit's place identifier as a UUID string, upper case
    as Swift's uuidString prints it. The columns id0..id3 are the UUID's bytes 0-3 ... 12-15 as
    big-endian 32-bit words (a 64-bit half would not survive the wire's f64); a word that is not a
    whole number in 0..2^32-1 reads 0, as the Swift client reads it."""
    words = [batch["columns"].get("id%d" % n) for n in range(4)]
    if any(column is None for column in words):
        return [None] * batch["count"]
    out = []
    for i in range(batch["count"]):
        raw = b""
        for column in words:
            value = column[i]
            word = int(value) if math.isfinite(value) and 0 <= value <= 0xFFFFFFFF else 0
            raw += struct.pack(">I", word)
        out.append(str(uuid.UUID(bytes=raw)).upper())
    return out


# --- the connection ---------------------------------------------------------------------------

class SensorKitClient:
    """One connection to sensorkitd. Call `hello` first (the constructor does not)."""

    def __init__(self, socket_path=None, timeout=None, on_event=None):
        self.socket_path = socket_path or os.environ.get("SENSORKIT_SOCKET") or DEFAULT_SOCKET
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.settimeout(timeout)
        self._sock.connect(self.socket_path)
        self._decoder = FrameDecoder(MAX_SERVER_FRAME)
        self._next_id = 1
        self._inbox = {}          # open request id -> deque of ("batch", dict) / ("reply", dict)
        self.events = deque()     # push events not yet taken with next_event()
        self.on_event = on_event  # optional callable(event dict), called as events arrive
        self.welcome = None       # the hello reply
        self.last_fetch = None    # the final reply of the last finished fetch (count, notice)

    # context manager / lifetime
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._sock.close()

    # -- low level: send a request, wait for its frames --

    def send(self, op, **fields):
        """Sends a request with a fresh id and returns the id; fields with value None are left out."""
        request_id = self._next_id
        self._next_id = (self._next_id + 1) & 0xFFFFFFFF or 1
        request = {k: v for k, v in fields.items() if v is not None}
        request.update(id=request_id, op=op)
        self._inbox[request_id] = deque()
        self._write(encode_request(request))
        return request_id

    def notify(self, op, target, batches=None):
        """`ack`/`cancel`: no reply of their own; id 0 as the Swift client sends."""
        request = {"id": 0, "op": op, "target": target}
        if batches is not None:
            request["batches"] = batches
        self._write(encode_request(request))

    def _write(self, data):
        try:
            self._sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError) as error:
            raise ProtocolError("sensorkitd closed the connection (%s)" % error) from error

    def next_frame_for(self, request_id):
        """The next ("batch", dict), ("skip", layout) or ("reply", dict) for an open request,
        reading as needed. "skip" is a batch of a layout this client does not know."""
        inbox = self._inbox[request_id]
        while not inbox:
            self._read_once()
        item = inbox.popleft()
        if item[0] == "reply":
            del self._inbox[request_id]
        return item

    def fileno(self):
        """The socket, for an event loop to watch for readability (the participant's watcher)."""
        return self._sock.fileno()

    def read_ready(self):
        """For an event loop that saw the socket readable: reads once (bounded by the socket
        timeout) and dispatches what arrived — events to `events`/`on_event`, replies to their
        requests. Raises ProtocolError when the daemon closed the connection."""
        self._read_once()

    def wait_reply(self, request_id):
        """Reads until the request's final reply; returns it, or raises SensorKitError."""
        while True:
            kind, value = self.next_frame_for(request_id)
            if kind == "reply":
                return self._checked(value)

    def call(self, op, **fields):
        return self.wait_reply(self.send(op, **fields))

    def next_event(self):
        """The next push event (authorizationChanged, recordingStarted, recordingStopped,
        consentPending), waiting for one if none is queued (bounded by the socket timeout)."""
        while not self.events:
            self._read_once()
        return self.events.popleft()

    def _checked(self, reply):
        error = reply.get("error")
        if error is not None:
            raise SensorKitError(error.get("code"), error.get("domain"), error.get("message"), reply.get("id"),
                                 reply.get("missed"))
        return reply

    def _read_once(self):
        try:
            data = self._sock.recv(1 << 20)
        except ConnectionResetError as error:
            raise ProtocolError("sensorkitd closed the connection (%s)" % error) from error
        if not data:
            raise ProtocolError("sensorkitd closed the connection")
        self._decoder.feed(data)
        while True:
            frame = self._decoder.next()
            if frame is None:
                return
            self._dispatch(*frame)

    def _dispatch(self, kind, payload):
        if kind == KIND_BATCH:
            try:
                batch = decode_batch(payload)
            except UnknownLayoutError as unknown:  # docs/protocol.md §8: skip, but keep acking
                inbox = self._inbox.get(unknown.request_id)
                if inbox is not None:
                    inbox.append(("skip", unknown.layout))
                return
            inbox = self._inbox.get(batch["request_id"])
            if inbox is not None:
                inbox.append(("batch", batch))
            return
        message = json.loads(payload.decode("utf-8"))
        # A live subscription's own events (subscribed, gap) go to its inbox, in order with its
        # batches. Events that follow their request's final reply (a watch's consentPending,
        # maybe read together with the reply) are push events like the others.
        inbox = self._inbox.get(message.get("target")) if "event" in message else None
        if inbox is not None and not (inbox and inbox[-1][0] == "reply"):
            inbox.append(("event", message))
            return
        if "event" in message:
            self.events.append(message)
            if self.on_event:
                self.on_event(message)
            return
        request_id = message.get("id")
        if request_id is None:
            # Connection-level error (bad framing, an unparsable request): nobody's reply.
            error = message.get("error") or {}
            raise SensorKitError(error.get("code"), error.get("domain"), error.get("message"), None)
        inbox = self._inbox.get(request_id)
        if inbox is not None:
            inbox.append(("reply", message))

    # -- study-app operations (docs/protocol.md §3.1) --

    def hello(self, app=None, version=PROTOCOL_VERSION):
        """Must be the first request. With `app` (a bundle id in apps.d) this is an app session;
        without, an admin session (sensorkitctl). Returns the reply (version, app, timeline)."""
        self.welcome = self.call("hello", v=version, app=app)
        return self.welcome

    def status(self, sensor=None):
        """Authorization and stake of each entitled sensor (or one): list of dicts with sensor,
        authorizationStatus (0 notDetermined, 1 authorized, 2 denied), recording, firstRecording."""
        return self.call("status", sensor=sensor).get("states", [])

    def request_authorization(self, sensors, wait=True):
        """Asks a person for consent. With wait=True blocks until every sensor is decided and
        returns None; raises SensorKitError (promptDeclined when all were already decided). With
        wait=False returns the request id; finish with wait_reply(id)."""
        request_id = self.send("requestAuthorization", sensors=sorted(sensors))
        if not wait:
            return request_id
        self.wait_reply(request_id)
        return None

    def start_recording(self, sensor):
        self.call("startRecording", sensor=sensor)

    def stop_recording(self, sensor):
        self.call("stopRecording", sensor=sensor)

    def fetch_devices(self, sensor):
        """Devices with stored data for the sensor: list of dicts (identifier, name, model, ...)."""
        return self.call("fetchDevices", sensor=sensor).get("devices", [])

    def fetch(self, sensor, from_ns, to_ns, device="host", window=DEFAULT_FETCH_WINDOW):
        """Generator of decoded batches for samples with sensor time in (from_ns, to_ns] (SR ns).

        Each batch is acknowledged when the consumer asks for the next one, so at most `window`
        batches are ever in flight. Closing the generator early (break) cancels the fetch and
        drains it. The final reply (count, notice) is the generator's return value and is kept in
        `client.last_fetch`; errors raise SensorKitError."""
        request_id = self.send("fetch", sensor=sensor, device=device, **{"from": from_ns, "to": to_ns}, window=window)
        finished = False
        try:
            while True:
                kind, value = self.next_frame_for(request_id)
                if kind == "reply":
                    finished = True
                    self.last_fetch = self._checked(value)
                    return self.last_fetch
                if kind == "batch":
                    yield value
                self.notify("ack", request_id, batches=1)  # consumed (or skipped: unknown layout)
        finally:
            if not finished and request_id in self._inbox:
                self._cancel_and_drain(request_id)

    def _cancel_and_drain(self, request_id):
        try:
            self.notify("cancel", request_id)
            while True:
                kind, value = self.next_frame_for(request_id)
                if kind == "reply":
                    self.last_fetch = value
                    return
        except (OSError, ProtocolError):
            self._inbox.pop(request_id, None)

    def subscribe(self, sensor, device="host", window=DEFAULT_FETCH_WINDOW, events=False):
        """Generator of decoded batches of `sensor` as the daemon records them (docs/protocol.md
        §3.9; released data only: the daemon refuses a sensor with a hold). With events=True it
        also yields the subscription's `subscribed` and `gap` event dicts (they have "event").

        Each batch is acknowledged when the consumer asks for the next one, as a fetch's. The
        subscription runs until the source stops (the final reply is the return value and is kept
        in `client.last_fetch`), the consumer closes the generator (the subscription is cancelled),
        or an error: SensorKitError, whose `missed` says what a subscriber that fell behind (111
        overrun) did not get."""
        request_id = self.send("subscribe", sensor=sensor, device=device, window=window)
        finished = False
        try:
            while True:
                kind, value = self.next_frame_for(request_id)
                if kind == "reply":
                    finished = True
                    self.last_fetch = self._checked(value)
                    return self.last_fetch
                if kind == "event":
                    if events:
                        yield value
                    continue
                if kind == "batch":
                    yield value
                self.notify("ack", request_id, batches=1)
        finally:
            if not finished and request_id in self._inbox:
                self._cancel_and_drain(request_id)

    def fetch_all(self, sensor, from_ns, to_ns, device="host", window=DEFAULT_FETCH_WINDOW):
        """The whole fetch as one batch-shaped dict (lists concatenated) plus the final reply."""
        merged = None
        for batch in self.fetch(sensor, from_ns, to_ns, device, window):
            if merged is None:
                merged = {k: (dict((c, list(v)) for c, v in batch[k].items()) if k == "columns" else batch[k])
                          for k in batch}
                merged["sensor_times"] = list(batch["sensor_times"])
                merged["write_times"] = list(batch["write_times"])
                merged["ragged"] = list(batch["ragged"])
                continue
            merged["count"] += batch["count"]
            merged["sensor_times"] += batch["sensor_times"]
            merged["write_times"] += batch["write_times"]
            merged["ragged"] += batch["ragged"]
            for name, values in batch["columns"].items():
                merged["columns"][name] += values
        return merged, self.last_fetch

    # -- administrative operations (docs/protocol.md §3.2) --

    def daemon_status(self):
        """dict of strings: version, now (SR ns), boot, connections, recording."""
        return self.call("daemonStatus").get("info", {})

    def now_ns(self):
        """The daemon's SR time now, in nanoseconds (from daemonStatus)."""
        return int(self.daemon_status()["now"])

    def sensors(self):
        return self.call("sensors").get("states", [])

    def devices(self):
        return self.call("devices").get("sources", [])

    def apps(self):
        return self.call("apps").get("apps", [])

    def consent_list(self, app=None):
        return self.call("consentList", app=app).get("consent", [])

    def consent_decide(self, app, decisions):
        """decisions: {sensor raw value: True (allow) / False (deny)}. Returns the reply's notice
        (set when a sensor the study marks Required was declined) or None."""
        return self.call("consentDecide", app=app, decisions=dict(decisions)).get("notice")

    def watch_consent(self):
        """Asks to be told whenever what an app waits for changes (docs/protocol.md §3.10; root and
        a study's Consenters, one watch per connection). After the reply come `consentPending`
        events, taken with next_event() or on_event: {"event": "consentPending", "target": id,
        "app": bundle id, "sensors": [raw values waiting for an answer now; empty once answered]},
        first one per app that waits now. Returns the reply; SensorKitError 104 for a uid that
        answers for no app, 103 over the limits."""
        return self.call("watchConsent")

    def stakes(self):
        return self.call("stakes").get("stakes", [])

    def health(self, from_ns=None, to_ns=None):
        """What each stream stored over (from_ns, to_ns] (default the day before now): spans,
        deletion records, rates (docs/protocol.md §3.5, `sensorkitctl status` and `report`)."""
        return self.call("health", **{"from": from_ns, "to": to_ns}).get("health", {})

    def delete_data(self, app, from_ns, to_ns, sensors=None):
        """A participant deletes what was recorded of the app's sensors (all it is entitled to, or
        `sensors`) with sensor time in (from_ns, to_ns] (docs/protocol.md §3.8). Every app then
        fetches the range as userInitiated deletion records. Only the app's Consenters and root
        may. Returns the reply (count: samples deleted; notice, if any)."""
        return self.call("deleteData", app=app, sensors=sorted(sensors) if sensors else None,
                         **{"from": from_ns, "to": to_ns})


# --- time (docs/protocol.md §9) ---------------------------------------------------------------

CF_EPOCH_UNIX_S = 978307200


def sr_now_ns(timeline):
    """SR ns now from the hello timeline; valid only on the daemon's machine in the same boot."""
    with open("/proc/sys/kernel/random/boot_id") as f:
        boot = f.read().strip()
    if boot != timeline["boot"]:
        raise ValueError("this process runs in boot %s, the timeline's anchor is for %s" % (boot, timeline["boot"]))
    return timeline["anchor"] + time.clock_gettime_ns(time.CLOCK_BOOTTIME)


def sr_to_unix_ns(sr_ns, timeline):
    """Wall-clock Unix ns of an SR ns with the current offset, as Apple's toCFAbsoluteTime does."""
    now_unix = time.time_ns()
    return sr_ns + (now_unix - sr_now_ns(timeline))


# --- command line -----------------------------------------------------------------------------

USAGE = """usage: sensorkit_client.py [--socket PATH] [--app ID] COMMAND [ARGS]

App session (--app ID):
  status [SENSOR]                 authorization and stakes
  authorize SENSOR...             requestAuthorization; waits for sensorkitctl consent
  start SENSOR | stop SENSOR      startRecording / stopRecording
  fetch-devices SENSOR
  fetch SENSOR FROM TO [DEVICE]   one JSON line per sample; summary on stderr
Admin session (no --app):
  daemon-status | sensors | devices | apps | stakes | now
  consent-list [APP]
  consent-decide APP SENSOR=allow|deny ...

SENSOR: raw value or Swift name (accelerometer, rotationRate, ...); append .tombstones for deletion
records. FROM/TO: SR nanoseconds, or now, now-25h, now-90s (units ns us ms s m h d).
"""

_UNITS = {"ns": 1, "us": 1000, "ms": 10**6, "s": 10**9, "m": 60 * 10**9, "h": 3600 * 10**9, "d": 86400 * 10**9}


def _sensor_arg(text):
    base, suffix = (text[:-len(".tombstones")], ".tombstones") if text.endswith(".tombstones") else (text, "")
    return SENSOR_NAMES.get(base, base) + suffix


def _time_arg(text, now):
    if text.lstrip("-").isdigit():
        return int(text)
    if not text.startswith("now"):
        raise ValueError("time %r: SR ns or now[-N<unit>]" % text)
    rest = text[3:]
    if not rest:
        return now()
    sign = -1 if rest[0] == "-" else 1
    rest = rest[1:]
    unit = next(u for u in sorted(_UNITS, key=len, reverse=True) if rest.endswith(u))
    return now() + sign * int(float(rest[:-len(unit)]) * _UNITS[unit])


def _json_value(value):
    return None if isinstance(value, float) and math.isnan(value) else value


def main(argv):
    args = list(argv)
    socket_path, app = None, None
    while args and args[0].startswith("--"):
        option = args.pop(0)
        if option == "--socket":
            socket_path = args.pop(0)
        elif option == "--app":
            app = args.pop(0)
        elif option in ("--help", "-h"):
            print(USAGE)
            return 0
        else:
            sys.stderr.write("unknown option %s\n%s" % (option, USAGE))
            return 2
    if not args:
        sys.stderr.write(USAGE)
        return 2
    command, rest = args[0], args[1:]
    out = lambda value: print(json.dumps(value, indent=2, sort_keys=True))
    try:
        with SensorKitClient(socket_path) as client:
            client.hello(app)
            if command == "status":
                out(client.status(_sensor_arg(rest[0]) if rest else None))
            elif command == "authorize":
                client.request_authorization([_sensor_arg(s) for s in rest])
                out(client.status())
            elif command in ("start", "stop"):
                (client.start_recording if command == "start" else client.stop_recording)(_sensor_arg(rest[0]))
            elif command == "fetch-devices":
                out(client.fetch_devices(_sensor_arg(rest[0])))
            elif command == "fetch":
                sensor = _sensor_arg(rest[0])
                cached = []  # one daemon "now" for both ends of the range
                now = lambda: cached[0] if cached else cached.append(client.now_ns()) or cached[0]
                from_ns, to_ns = _time_arg(rest[1], now), _time_arg(rest[2], now)
                device = rest[3] if len(rest) > 3 else "host"
                for batch in client.fetch(sensor, from_ns, to_ns, device):
                    names = list(batch["columns"])
                    rr = split_ragged(batch) if batch["layout_name"] == "heartRate" else None
                    places = visit_identifiers(batch) if batch["layout_name"] == "visits" else None
                    for i in range(batch["count"]):
                        row = {"sensor_time": batch["sensor_times"][i], "write_time": batch["write_times"][i]}
                        row.update((name, _json_value(batch["columns"][name][i])) for name in names)
                        if rr is not None:
                            row["rr"] = rr[i]
                        if places is not None:
                            row["identifier"] = places[i]
                        print(json.dumps(row))
                final = client.last_fetch or {}
                sys.stderr.write("fetched %s samples%s\n" % (final.get("count"), (": " + final["notice"]) if final.get("notice") else ""))
            elif command == "daemon-status":
                out(client.daemon_status())
            elif command == "now":
                print(client.now_ns())
            elif command == "sensors":
                out(client.sensors())
            elif command == "devices":
                out(client.devices())
            elif command == "apps":
                out(client.apps())
            elif command == "stakes":
                out(client.stakes())
            elif command == "consent-list":
                out(client.consent_list(rest[0] if rest else None))
            elif command == "consent-decide":
                decisions = {}
                for item in rest[1:]:
                    sensor, _, verdict = item.partition("=")
                    decisions[_sensor_arg(sensor)] = verdict in ("allow", "yes", "true", "1")
                notice = client.consent_decide(rest[0], decisions)
                if notice:
                    sys.stderr.write(notice + "\n")
            else:
                sys.stderr.write("unknown command %s\n%s" % (command, USAGE))
                return 2
    except SensorKitError as error:
        sys.stderr.write("sensorkit_client: %s\n" % error)
        return 1
    except (OSError, ProtocolError) as error:
        sys.stderr.write("sensorkit_client: %s\n" % error)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

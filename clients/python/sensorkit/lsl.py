"""A Lab Streaming Layer outlet per sensorkitd stream (docs/live.md):

    python -m sensorkit.lsl accelerometer rotationRate            # an admin session (root, the daemon's group)
    python -m sensorkit.lsl --app org.example.rig heartRate --device ble:AA:BB:CC:DD:EE:FF

Each sensor's live subscription feeds one outlet: channels are the batch layout's columns in
SensorKit units (docs/protocol.md §5.2), format double (values exact), nominal rate from the
source (`devices`) or, where that is not shown, from the first batch's spacing. The stream's XML
description carries channel labels, units and types as XDF readers (LabRecorder, pyxdf) expect.

Sample times are mapped from the daemon's clock onto LSL's `local_clock()`: an SR time is the
boot's CLOCK_BOOTTIME plus the boot's anchor (from `hello`), and CLOCK_BOOTTIME − local_clock() is
measured here — the tightest of several bracketed reads, again every few seconds, since it moves
only when the machine suspends. When the daemon goes away the outlets stay and the subscription
is taken up again once it is back (with its new timeline), so inlets never lose the stream.

pylsl comes from PyPI (its wheel carries liblsl): scripts/install-deps.sh builds the venv.
"""
import argparse
import signal
import sys
import time

import pylsl

from sensorkit_client import LAYOUTS, ProtocolError, SensorKitClient, SensorKitError, _sensor_arg

# The unit of each batch column (docs/protocol.md §5.2; sensorkitctl's LayoutUnits says the same).
UNITS = {
    ("motion", "rotationRate"): "rad/s", ("motion", None): "g",
    ("pressure", "pressure"): "kPa", ("pressure", "temperature"): "degC",
    ("ambientLight", "lux"): "lx", ("heartRate", "bpm"): "bpm",
    ("electrocardiogram", "microvolts"): "microvolts", ("electrocardiogram", "frequency"): "Hz",
    ("keyboardMetrics", "duration"): "s", ("keyboardMetrics", "typingDuration"): "s",
    ("keyboardMetrics", "typingSpeed"): "characters/s",
}
# LSL content types (XDF's `type`) by layout.
CONTENT_TYPES = {"motion": "MoCap", "electrocardiogram": "ECG", "photoplethysmogram": "PPG", "heartRate": "HeartRate"}
LAYOUT_OF_SENSOR = {
    "com.apple.SensorKit.motion.accelerometer": 1, "com.apple.SensorKit.motion.gyroscope": 1,
    "com.apple.SensorKit.ambientPressure": 2, "com.apple.SensorKit.als": 3, "com.apple.SensorKit.pedometer.data": 4,
    "com.apple.SensorKit.heart.rate": 5, "com.apple.SensorKit.onWristState": 6, "com.apple.SensorKit.ECG": 7,
    "com.apple.SensorKit.PPG": 8, "com.apple.SensorKit.keyboardMetrics": 10,
}
SHORT_NAMES = {
    "com.apple.SensorKit.motion.accelerometer": "accelerometer", "com.apple.SensorKit.motion.gyroscope": "rotationRate",
}


def unit(layout, column, sensor):
    if layout == "motion":
        return UNITS[("motion", "rotationRate" if sensor.endswith("gyroscope") else None)]
    return UNITS.get((layout, column), "")


class ClockMapping:
    """SR ns → LSL seconds: (sr − anchor)/1e9 is the sample's CLOCK_BOOTTIME, less the measured
    CLOCK_BOOTTIME − local_clock() offset."""

    REMEASURE = 5.0

    def __init__(self, anchor_ns):
        self.anchor_ns = anchor_ns
        self.offset = None
        self.measured_at = None

    @staticmethod
    def measure(tries=16):
        """CLOCK_BOOTTIME − local_clock() from the read bracketed most tightly by two local_clock() reads."""
        best = None
        for _ in range(tries):
            before = pylsl.local_clock()
            boot = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
            after = pylsl.local_clock()
            if best is None or after - before < best[0]:
                best = (after - before, boot / 1e9 - (before + after) / 2)
        return best[1]

    def lsl_time(self, sr_ns):
        now = time.monotonic()
        if self.offset is None or now - self.measured_at > self.REMEASURE:
            self.offset = self.measure()
            self.measured_at = now
        return (sr_ns - self.anchor_ns) / 1e9 - self.offset


def stream_info(sensor, device, layout_name, columns, rate, source_host):
    name = "sensorkit %s" % SHORT_NAMES.get(sensor, sensor.rsplit(".", 1)[-1])
    if device != "host":
        name += " " + device
    info = pylsl.StreamInfo(name, CONTENT_TYPES.get(layout_name, layout_name), len(columns), rate,
                            pylsl.cf_double64, "sensorkitd:%s:%s:%s" % (source_host, sensor, device))
    description = info.desc()
    channels = description.append_child("channels")
    for column in columns:
        channel = channels.append_child("channel")
        channel.append_child_value("label", column)
        channel.append_child_value("unit", unit(layout_name, column, sensor))
        channel.append_child_value("type", CONTENT_TYPES.get(layout_name, layout_name))
    acquisition = description.append_child("acquisition")
    acquisition.append_child_value("manufacturer", "sensorkitd")
    acquisition.append_child_value("sensor", sensor)
    acquisition.append_child_value("device", device)
    acquisition.append_child_value("layout", layout_name)
    acquisition.append_child_value("timestamps", "CLOCK_BOOTTIME of the sample mapped onto local_clock()")
    return info


def nominal_rate(client, sensor, device):
    """The source's promised rate (`devices`, shown to administrators), or None."""
    try:
        sources = client.devices()
    except SensorKitError:
        return None
    for source in sources:
        if source.get("sensor") == sensor and source.get("device") == device:
            try:
                return float(source.get("details", {}).get("rate", ""))
            except ValueError:
                return None
    return None


def rate_from(batch):
    times = batch["sensor_times"]
    steps = sorted(b - a for a, b in zip(times, times[1:]) if b > a)
    if not steps:
        return pylsl.IRREGULAR_RATE
    return round(1e9 / steps[len(steps) // 2], 3)


class Relay:
    """The outlets of one run: kept across daemon restarts, keyed by (sensor, device)."""

    def __init__(self, arguments, log=sys.stderr):
        self.arguments = arguments
        self.log = log
        self.outlets = {}
        self.stopping = False

    def say(self, text):
        print("sensorkit.lsl: " + text, file=self.log, flush=True)

    def run(self):
        backoff = 0.1
        while not self.stopping:
            try:
                self.serve()
                backoff = 0.1
            except (OSError, ProtocolError) as error:
                if self.stopping:
                    return
                self.say("sensorkitd is not reachable (%s); trying again in %.1f s" % (error, backoff))
                time.sleep(backoff)
                backoff = min(2.0, backoff * 2)

    def serve(self):
        """One connection: subscribes to every sensor and relays until the connection ends."""
        a = self.arguments
        with SensorKitClient(a.socket, timeout=None) as client:
            welcome = client.hello(a.app)
            mapping = ClockMapping(welcome["timeline"]["anchor"])
            subscriptions = {}
            for sensor in a.sensors:
                request_id = client.send("subscribe", sensor=sensor, device=a.device, window=16)
                subscriptions[request_id] = sensor
            self.say("relaying %s" % ", ".join(subscriptions.values()))
            while subscriptions and not self.stopping:
                client._read_once()
                for request_id, sensor in list(subscriptions.items()):
                    inbox = client._inbox.get(request_id)
                    while inbox:
                        kind, value = inbox.popleft()
                        if kind == "batch":
                            self.push(client, mapping, sensor, value)
                            client.notify("ack", request_id, batches=1)
                        elif kind == "skip":
                            client.notify("ack", request_id, batches=1)
                        elif kind == "event" and value.get("event") == "gap":
                            self.say("%s lost data: %s" % (sensor, value.get("missed")))
                        elif kind == "reply":
                            del client._inbox[request_id]
                            del subscriptions[request_id]
                            error = value.get("error")
                            self.say("%s ended: %s" % (sensor, error or value.get("notice")))
                            # The source stopped (the daemon may be stopping), the relay fell
                            # behind (111), or it was refused: start over on a new connection,
                            # which finds the daemon as it is then (restarted, with a new timeline).
                            raise ProtocolError("the subscription of %s ended" % sensor)

    def push(self, client, mapping, sensor, batch):
        key = (sensor, self.arguments.device)
        outlet = self.outlets.get(key)
        layout_name, columns = LAYOUTS[batch["layout"]]
        if outlet is None:
            rate = nominal_rate(client, sensor, self.arguments.device) or rate_from(batch)
            info = stream_info(sensor, self.arguments.device, layout_name, columns, rate, self.arguments.host)
            outlet = self.outlets[key] = pylsl.StreamOutlet(info, chunk_size=0, max_buffered=360)
            self.say("outlet %s: %d channels at %s Hz" % (info.name(), len(columns), rate))
        values = batch["columns"]
        times = batch["sensor_times"]
        for i, sr_ns in enumerate(times):
            # One hand-over of the daemon goes out to the inlets at once, with its last sample.
            outlet.push_sample([values[c][i] for c in columns], mapping.lsl_time(sr_ns), pushthrough=i == len(times) - 1)


def arguments(argv):
    parser = argparse.ArgumentParser(
        prog="python -m sensorkit.lsl",
        description="One Lab Streaming Layer outlet per sensor, fed live by sensorkitd (the lab profile: hold 0).")
    parser.add_argument("sensors", nargs="+", metavar="SENSOR", help="accelerometer, rotationRate, heartRate, ... or raw values")
    parser.add_argument("--app", help="subscribe as this study app (its consent applies); default: an admin session")
    parser.add_argument("--device", default="host", help='"host" (default) or a wearable, "ble:AA:BB:CC:DD:EE:FF"')
    parser.add_argument("--socket", help="sensorkitd's socket (default $SENSORKIT_SOCKET or /run/sensorkit/sensorkitd.sock)")
    parser.add_argument("--host", default=None, help="the name in each stream's source_id (default this machine's)")
    parsed = parser.parse_args(argv)
    parsed.sensors = [_sensor_arg(s) for s in parsed.sensors]
    unknown = [s for s in parsed.sensors if s not in LAYOUT_OF_SENSOR]
    if unknown:
        parser.error("no live layout for %s" % ", ".join(unknown))
    if parsed.host is None:
        import socket
        parsed.host = socket.gethostname()
    return parsed


def main(argv=None):
    relay = Relay(arguments(sys.argv[1:] if argv is None else argv))

    def stop(*_):
        relay.stopping = True
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, stop)
    try:
        relay.run()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())

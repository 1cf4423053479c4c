"""Shared by the examples: which app to act as and which range to read.

Run an example as the app's Unix user: `SENSORKIT_APP=org.example.study python3 examples/accelerometer.py`
(SENSORKIT_SOCKET if the daemon is not on /run/sensorkit/sensorkitd.sock; SENSORKIT_SINCE /
SENSORKIT_UNTIL as SR ns or now-48h; SENSORKIT_HOLD when the daemon's hold is not 24h)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import sensorkit  # noqa: E402


def study():
    app = os.environ.get("SENSORKIT_APP")
    if not app:
        sys.exit("set SENSORKIT_APP to the study's bundle id (its folder in apps.d)")
    return sensorkit.Study(app, hold=os.environ.get("SENSORKIT_HOLD", "24h"))


def window():
    return os.environ.get("SENSORKIT_SINCE"), os.environ.get("SENSORKIT_UNTIL")


def show(name, batches, columns):
    """Prints the sample count and the first and last sample of the named columns."""
    rows = 0
    first = last = None
    for batch in batches:
        for i in range(batch["count"]):
            sample = [batch["sensor_times"][i]] + [batch["columns"][c][i] for c in columns]
            first = first or sample
            last = sample
            rows += 1
    print("%s: %d samples" % (name, rows))
    if rows:
        print("  first  sr_time=%d  %s" % (first[0], "  ".join("%s=%g" % kv for kv in zip(columns, first[1:]))))
        print("  last   sr_time=%d  %s" % (last[0], "  ".join("%s=%g" % kv for kv in zip(columns, last[1:]))))
    return rows

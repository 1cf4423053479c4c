#!/usr/bin/env python3
"""Prints what the demo rig recorded, per sensor, from `sensorkitctl fetch` CSV files: samples,
span and rate (from the median spacing of the sensor times), the gaps the daemon explained
(deletion records with their reasons) and the first values in SensorKit's units, written for
people: units printed, sensible decimals, enum values by name (the CSV columns and their raw
values are docs/protocol.md §5.2's).

Usage: demo_summary.py FOLDER SENSOR...
FOLDER holds SENSOR.csv (samples) and SENSOR.gaps.csv (its `.tombstones` stream) for each SENSOR.
The table's lines start with the sensor's name and its sample count, which the demo's end-to-end
test reads.
"""
import csv
import os
import sys

# SRDeletionReason raw values (Sources/SensorKitModel/Fetch/SRDeletionRecord.swift).
REASONS = {0: "userInitiated", 1: "lowDiskSpace", 2: "ageLimit", 3: "noInterestedClients", 4: "systemInitiated"}
REASON_MEANINGS = {
    "userInitiated": "deleted by a person", "lowDiskSpace": "evicted for the disk budget",
    "ageLimit": "older than the window", "noInterestedClients": "no app wanted it",
    "systemInitiated": "device gone, crash or overflow",
}
SHOWN_ROWS = 3
PLACEMENTS = ["unknown", "frontTop", "frontBottom", "frontRight", "frontLeft", "frontTopRight", "frontTopLeft",
              "frontBottomRight", "frontBottomLeft"]
CONFIDENCES = ["low", "medium", "high", "highest"]
SIDES = ["left", "right"]
LEADS = {1: "rightArmMinusLeftArm", 2: "leftArmMinusRightArm"}


def name(table, raw):
    """An enum's raw value (a float in the CSV) by its SensorKit name; unknown values as themselves."""
    try:
        index = int(float(raw))
    except ValueError:
        return raw
    if isinstance(table, dict):
        return table.get(index, raw)
    return table[index] if 0 <= index < len(table) else raw


def number(raw, decimals, unit=""):
    """A value with a fixed number of decimals and its unit; NaN (not measured) as a dash."""
    value = float(raw)
    if value != value:
        return "-"
    text = "%.*f" % (decimals, value)
    if text.startswith("-") and float(text) == 0:
        text = text[1:]  # -0.000 reads as a sign that is not there
    return text + (" " + unit if unit else "")


def ecg_flags(raw):
    bits = int(float(raw))
    names = [label for bit, label in ((1, "signalInvalid"), (2, "crownTouched")) if bits & bit]
    return ", ".join(names) if names else "signal ok"


def describe(sensor, header, row):
    """One sample as a person reads it, from its CSV row (sensorTime, writeTime, columns…)."""
    v = dict(zip(header, row))
    if sensor in ("accelerometer", "rotationRate"):
        unit, decimals = ("g", 3) if sensor == "accelerometer" else ("rad/s", 3)
        return "x %s, y %s, z %s" % tuple(number(v[axis], decimals, unit) for axis in "xyz")
    if sensor == "ambientLightSensor":
        text = number(v["lux"], 1, "lx")
        if float(v["chromaticityX"]) or float(v["chromaticityY"]):
            text += ", chromaticity x %s y %s" % (number(v["chromaticityX"], 3), number(v["chromaticityY"], 3))
        return text + ", sensor placement " + name(PLACEMENTS, v["placement"])
    if sensor == "ambientPressure":
        return "%s, %s" % (number(v["pressure"], 3, "kPa"), number(v["temperature"], 1, "°C"))
    if sensor == "pedometerData":
        seconds = (float(v["endTime"]) - int(v["sensorTime"])) / 1e9
        return "%d steps in %.1f s" % (int(float(v["steps"])), seconds)
    if sensor == "heartRate":
        text = "%s beats/min, confidence %s" % (number(v["bpm"], 0), name(CONFIDENCES, v["confidence"]))
        intervals = v.get("rrIntervals", "").split()
        if intervals:
            text += ", RR " + " ".join(number(rr, 3, "s") for rr in intervals)
        return text
    if sensor == "onWristState":
        worn = "worn (skin contact)" if float(v["onWrist"]) else "not worn (no skin contact)"
        return "%s; wristLocation %s, crownOrientation %s" % (
            worn, name(SIDES, v["wristLocation"]), name(SIDES, v["crownOrientation"]))
    if sensor == "electrocardiogram":
        return "%s, lead %s, %s, at %s" % (
            number(v["microvolts"], 0, "µV"), name(LEADS, v["lead"]), ecg_flags(v["flags"]), number(v["frequency"], 0, "Hz"))
    if sensor == "photoplethysmogram":
        channels = ", ".join("%s %s" % (c, number(v[c], 0)) for c in ("ppg0", "ppg1", "ppg2", "ppg3") if number(v[c], 0) != "-")
        return "optical %s; ambient %s (raw counts)" % (channels, number(v["ambient"], 0))
    return ", ".join("%s %s" % pair for pair in list(v.items())[2:])


def rows(path):
    if not os.path.exists(path):
        return [], []
    with open(path, newline="") as handle:
        table = list(csv.reader(handle))
    return (table[0], table[1:]) if table else ([], [])


def main(folder, sensors):
    print("%-20s %8s %9s %10s  %s" % ("sensor", "samples", "span s", "rate Hz", "gaps (deletion records: reason, time lost)"))
    details = []
    for sensor in sensors:
        header, samples = rows(os.path.join(folder, sensor + ".csv"))
        _, gaps = rows(os.path.join(folder, sensor + ".gaps.csv"))
        times = sorted(int(row[0]) for row in samples)
        span = (times[-1] - times[0]) / 1e9 if len(times) > 1 else 0.0
        # The rate from the median spacing, so a gap does not lower it (the gaps have their own column).
        spacings = sorted(later - earlier for earlier, later in zip(times, times[1:]) if later > earlier)
        rate = "%.2f" % (1e9 / spacings[len(spacings) // 2]) if spacings else "-"
        reasons = {}
        lost = 0.0
        for gap in gaps:
            name = REASONS.get(int(float(gap[3])), gap[3])
            reasons[name] = reasons.get(name, 0) + 1
            lost += (float(gap[2]) - int(gap[0])) / 1e9
        explained = ", ".join("%d %s" % (n, name) for name, n in sorted(reasons.items())) or "none"
        if gaps:
            explained += " (%.1f s)" % lost
        print("%-20s %8d %9.1f %10s  %s" % (sensor, len(samples), span, rate, explained))
        details.append((sensor, header, samples[:SHOWN_ROWS], gaps))
    # Times as seconds after the recording's first sample (SR ns mean nothing to a person).
    origin = min((int(rows[0][0]) for _, _, rows, _ in details if rows), default=0)
    for sensor, header, shown, gaps in details:
        print()
        print("-- %s: first values" % sensor)
        if not shown:
            print("  (nothing recorded)")
        for row in shown:
            print("  at %7.3f s  %s" % ((int(row[0]) - origin) / 1e9, describe(sensor, header, row)))
        for gap in gaps[:SHOWN_ROWS]:
            reason = REASONS.get(int(float(gap[3])), gap[3])
            start = (int(gap[0]) - origin) / 1e9
            print("  gap from %.1f s for %.1f s: %s (%s)" % (
                start, (float(gap[2]) - int(gap[0])) / 1e9, reason, REASON_MEANINGS.get(reason, "")))

if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

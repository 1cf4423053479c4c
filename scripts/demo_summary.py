#!/usr/bin/env python3
"""Prints what the demo rig recorded, per sensor, from `sensorkitctl fetch` CSV files: samples,
span and rate (from the median spacing of the sensor times), the gaps the daemon explained (deletion records with their reasons) and the first
rows in SensorKit's units.

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
SHOWN_ROWS = 3


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
    for sensor, header, shown, gaps in details:
        print()
        print("-- %s: first rows (times are SR ns)" % sensor)
        table = [header] + shown if header else [["(nothing recorded)"]]
        widths = [max(len(row[i]) if i < len(row) else 0 for row in table) for i in range(len(table[0]))]
        for row in table:
            print("  " + "  ".join(value.ljust(widths[i]) for i, value in enumerate(row)))
        for gap in gaps[:SHOWN_ROWS]:
            print("  gap %s … %.0f: %s" % (gap[0], float(gap[2]), REASONS.get(int(float(gap[3])), gap[3])))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])

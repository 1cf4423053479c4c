#!/usr/bin/env python3
"""Writes a umockdev script that feeds /dev/iio:device0 of the demo rig's BMI160
(Tests/Fixtures/iio/bmi160.umockdev) with a realistic 100 Hz accel + gyro stream: a tablet picked
up from a table, tilted back and forth and carried while walking. Scans use the kernel layout of
that fixture (gyro x,y,z then accel x,y,z as le:s16, 4 bytes of padding, le:s64 timestamp = 24
bytes) and CLOCK_BOOTTIME timestamps starting `--lead` seconds from now.

Usage: demo_rig.py SECONDS [--lead S] > stream.script
Script format (docs/iio.md §12.8): `r <ms> <data>` lines; bytes < 0x20 become ^(b+64),
'^' becomes ^`; umockdev 0.17 swallows a line's leading 0x20, so such bytes move to the line before.
"""
import math
import random
import struct
import sys
import time

RATE = 100                  # Hz
PER_LINE = 10               # scans per script line (one line every 100 ms)
ACCEL_SCALE = 0.000598      # m/s² per count (fixture's in_accel_scale)
GYRO_SCALE = 0.001065       # rad/s per count (fixture's in_anglvel_scale)
G = 9.80665


def motion(t):
    """Device acceleration (m/s²) and rotation (rad/s) at t seconds, chip axes."""
    if t < 2:            # lying face up on a table
        ax, ay, az, wx, wy, wz = 0.0, 0.0, G, 0.0, 0.0, 0.0
    elif t < 4:          # picked up: tilting towards the viewer
        tilt = (t - 2) / 2 * 1.2
        ax, ay, az = 0.0, -G * math.sin(tilt), G * math.cos(tilt)
        wx, wy, wz = 0.6, 0.0, 0.0
    else:                # held upright-ish and carried: steps at 1.8 Hz, sway at 0.5 Hz
        step = math.sin(2 * math.pi * 1.8 * t)
        sway = math.sin(2 * math.pi * 0.5 * t)
        ax = 0.8 * sway
        ay = -G * math.sin(1.2) + 1.5 * step
        az = G * math.cos(1.2) + 0.6 * step
        wx, wy, wz = 0.05 * step, 0.2 * sway, 0.1 * math.cos(2 * math.pi * 0.5 * t)
    return (ax, ay, az), (wx, wy, wz)


def counts(value, scale, noise):
    return max(-32768, min(32767, int(round(value / scale + random.gauss(0, noise)))))


def escape(data):
    out = bytearray()
    for b in data:
        if b == 0x5E:
            out += b"^`"
        elif b < 0x20:
            out += bytes([0x5E, b + 64])
        else:
            out.append(b)
    return bytes(out)


def main(argv):
    seconds = float(argv[0]) if argv else 8.0
    lead = float(argv[argv.index("--lead") + 1]) if "--lead" in argv else 2.0
    random.seed(2026)
    start = time.clock_gettime_ns(time.CLOCK_BOOTTIME) + int(lead * 1e9)
    period = 1_000_000_000 // RATE
    scans = []
    for i in range(int(seconds * RATE)):
        t = i / RATE
        (ax, ay, az), (wx, wy, wz) = motion(t)
        gyro = [counts(w, GYRO_SCALE, 1.5) for w in (wx, wy, wz)]
        accel = [counts(a, ACCEL_SCALE, 2.5) for a in (ax, ay, az)]
        scans.append(struct.pack("<6h4xq", *gyro, *accel, start + i * period))
    lines = [b"".join(scans[i:i + PER_LINE]) for i in range(0, len(scans), PER_LINE)]
    for i in range(1, len(lines)):
        while lines[i][:1] == b" ":
            lines[i - 1] += b" "
            lines[i] = lines[i][1:]
    out = sys.stdout.buffer
    for i, line in enumerate(lines):
        out.write(b"r %d " % (0 if i == 0 else 1000 // RATE * PER_LINE) + escape(line) + b"\n")


if __name__ == "__main__":
    main(sys.argv[1:])

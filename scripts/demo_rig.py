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


# The fixture's udev ACCEL_MOUNT_MATRIX (device = M · chip); the rig moves the device, so chip
# axes are Mᵀ · device (M is a rotation).
MOUNT_MATRIX = ((0, 1, 0), (-1, 0, 0), (0, 0, 1))


def device_motion(t):
    """What the device reads at t seconds, device axes (docs/design-notes/0002-axes.md: gravity as
    seen by the device, face up z = -1 g, upright y = -1 g) in m/s², and its rotation rate in rad/s.
    The pose is a tilt θ about device x (0: face up, π/2: upright facing the viewer) then a roll φ
    about device y; accelerometer and gyroscope are both derived from it, so they agree."""
    if t < 2:            # lying face up on a table
        theta, theta_rate, phi, phi_rate, lift = 0.0, 0.0, 0.0, 0.0, 0.0
    elif t < 4:          # picked up: the top edge rises, the screen turns towards the viewer
        theta_rate = 0.6
        theta, phi, phi_rate, lift = (t - 2) * theta_rate, 0.0, 0.0, 0.0
    else:                # held tilted towards the viewer and carried: steps at 1.8 Hz, sway at 0.5 Hz
        step = 2 * math.pi * 1.8
        sway = 2 * math.pi * 0.5
        theta = 1.2 + 0.02 * math.sin(step * t)
        theta_rate = 0.02 * step * math.cos(step * t)
        phi = 0.08 * math.sin(sway * t)
        phi_rate = 0.08 * sway * math.cos(sway * t)
        lift = 1.5 * math.sin(step * t)      # vertical acceleration of each step, m/s²
    # Gravity plus the upward acceleration, as the device sees it: (sin φ cos θ, -sin θ, -cos φ cos θ).
    seen = G + lift
    accel = (seen * math.sin(phi) * math.cos(theta), -seen * math.sin(theta), -seen * math.cos(phi) * math.cos(theta))
    # Body rates of R = Rx(θ)·Ry(φ): (cos φ θ', φ', sin φ θ').
    gyro = (math.cos(phi) * theta_rate, phi_rate, math.sin(phi) * theta_rate)
    return accel, gyro


def to_chip(vector):
    """Mᵀ · vector: device axes back to the chip's, which the kernel reports."""
    return tuple(sum(MOUNT_MATRIX[row][column] * vector[row] for row in range(3)) for column in range(3))


def motion(t):
    """Acceleration (m/s²) and rotation (rad/s) at t seconds, chip axes."""
    accel, gyro = device_motion(t)
    return to_chip(accel), to_chip(gyro)


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

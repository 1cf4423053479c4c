#!/usr/bin/env python3
"""Writes a umockdev script that feeds /dev/iio:device0 of the demo rig's BMI160
(Tests/Fixtures/iio/bmi160.umockdev) with a realistic 100 Hz accel + gyro stream: a tablet picked
up from a table, tilted back and forth and carried while walking. Scans use the kernel layout of
that fixture (gyro x,y,z then accel x,y,z as le:s16, 4 bytes of padding, le:s64 timestamp = 24
bytes) and CLOCK_BOOTTIME timestamps starting `--lead` seconds from now.

Usage: demo_rig.py SECONDS [--lead S] [--start NS] > stream.script
       demo_rig.py feed UMOCKDEV_DIR SECONDS [--start NS]

The second form feeds the rig's polled sensors (Tests/Fixtures/iio/demo-tablet.umockdev) by
rewriting their sysfs attributes every 100 ms for SECONDS: ambient light, pressure with
temperature, and a step counter, all following the same story as the motion stream (`--start`:
the CLOCK_BOOTTIME ns of t = 0, shared with the stream so both tell the story at the same time).
Script format (docs/iio.md §12.8): `r <ms> <data>` lines; bytes < 0x20 become ^(b+64),
'^' becomes ^`; umockdev 0.17 swallows a line's leading 0x20, so such bytes move to the line before.
"""
import math
import os
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


STEP_RATE = 1.8             # Hz, the walking cadence of the motion stream
PICKUP = (2.0, 4.0)         # s, lifted from the table (0.8 m up: the pressure drops ~9.5 Pa)
STAIRS = (20.0, 32.0)       # s, carried up one floor (3 m: ~36 Pa less)


def height(t):
    """Metres above the table top."""
    lifted = 0.8 * min(1.0, max(0.0, (t - PICKUP[0]) / (PICKUP[1] - PICKUP[0])))
    climbed = 3.0 * min(1.0, max(0.0, (t - STAIRS[0]) / (STAIRS[1] - STAIRS[0])))
    return lifted + climbed


def surroundings(t):
    """What the polled sensors read at t seconds: illuminance (lux), pressure (kPa), temperature
    (milli-°C) and the step counter's cumulative count. Face up on the table the light sensor (in
    the display bezel) looks at the ceiling lamps; held towards the viewer it sees the room;
    upstairs is a window. Pressure falls 12 Pa per metre; the hand warms the case slowly. Steps
    follow the cadence of the motion stream's walking, which starts when it is carried."""
    if t < PICKUP[0]:
        lux = 420.0
    elif t < PICKUP[1]:
        lux = 420.0 - 240.0 * (t - PICKUP[0]) / (PICKUP[1] - PICKUP[0])
    elif t < STAIRS[1]:
        lux = 180.0 + 15.0 * math.sin(2 * math.pi * STEP_RATE * t)
    else:
        lux = 650.0 + 40.0 * math.sin(2 * math.pi * 0.5 * t)
    lux = max(0.0, lux + random.gauss(0, 2.0))
    pressure = 101.3250 - 0.012 * height(t) + random.gauss(0, 0.0006)
    temperature = 22500 + 40 * max(0.0, t - PICKUP[0]) ** 0.5 + random.gauss(0, 10)
    steps = int((t - PICKUP[1]) * STEP_RATE) if t > PICKUP[1] else 0
    return lux, pressure, temperature, steps


def feed(root, seconds, start):
    """Rewrites the polled sensors' attributes every 100 ms (write then rename, so a read never
    sees a half-written value) until `seconds` have passed since `start`."""
    base = root + "/sys/devices/platform"
    attributes = {
        "demo-light/iio:device1/in_illuminance_input": lambda v: "%.3f" % v[0],
        "demo-pressure/iio:device2/in_pressure_input": lambda v: "%.6f" % v[1],
        "demo-pressure/iio:device2/in_temp_input": lambda v: "%d" % round(v[2]),
        "demo-steps/iio:device3/in_steps_input": lambda v: "%d" % v[3],
    }
    while True:
        t = (time.clock_gettime_ns(time.CLOCK_BOOTTIME) - start) / 1e9
        if t > seconds:
            return
        values = surroundings(max(0.0, t))
        for path, text in attributes.items():
            target = base + "/" + path
            with open(target + ".new", "w") as out:
                out.write(text(values) + "\n")
            os.replace(target + ".new", target)
        time.sleep(0.1)


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
    random.seed(2026)
    now = time.clock_gettime_ns(time.CLOCK_BOOTTIME)
    if argv[:1] == ["feed"]:
        start = int(argv[argv.index("--start") + 1]) if "--start" in argv else now
        feed(argv[1], float(argv[2]), start)
        return
    seconds = float(argv[0]) if argv else 8.0
    lead = float(argv[argv.index("--lead") + 1]) if "--lead" in argv else 2.0
    start = int(argv[argv.index("--start") + 1]) if "--start" in argv else now + int(lead * 1e9)
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

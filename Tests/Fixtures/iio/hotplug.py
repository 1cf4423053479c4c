#!/usr/bin/python3
"""Hotplug controller for IIOBridgeTests (run under `umockdev-wrapper`, always inside `timeout`).

Usage: umockdev-wrapper /usr/bin/python3 hotplug.py REPORT -- CHILD [ARGS...]
(CHILD is `iio-udev-child hotplug REPORT`.)

Creates an empty umockdev testbed, starts CHILD with UMOCKDEV_DIR pointing at it (and
IIO_UMOCKDEV_HOTPLUG_REPORT=REPORT), waits for CHILD to create REPORT.ready (its udev monitor is
listening), then adds a BMI160-like IIO device (uevent "add"), sends "change", sends "remove"
(umockdev 0.17 does not send it by itself) and removes the device. Exits with CHILD's status.
"""
import os
import subprocess
import sys
import time

import gi

gi.require_version('UMockdev', '1.0')
from gi.repository import UMockdev  # noqa: E402

report, separator, child = sys.argv[1], sys.argv[2], sys.argv[3:]
assert separator == '--' and child, __doc__

testbed = UMockdev.Testbed.new()
environment = dict(os.environ, UMOCKDEV_DIR=testbed.get_root_dir(), IIO_UMOCKDEV_HOTPLUG_REPORT=report)
process = subprocess.Popen(child, env=environment)

deadline = time.time() + 30
while not os.path.exists(report + '.ready'):
    if process.poll() is not None or time.time() > deadline:
        sys.exit('child exited or never became ready')
    time.sleep(0.02)

attributes = ['name', 'bmi160\n', 'dev', '244:0\n',
              'in_accel_x_raw', '12\n', 'in_accel_y_raw', '-16392\n', 'in_accel_z_raw', '40\n',
              'in_accel_scale', '0.000598\n']
properties = ['DEVNAME', '/dev/iio:device0', 'ACCEL_MOUNT_MATRIX', '0, 1, 0; -1, 0, 0; 0, 0, 1']
syspath = testbed.add_device('iio', 'iio:device0', None, attributes, properties)
time.sleep(0.2)
testbed.uevent(syspath, 'change')
time.sleep(0.2)
testbed.uevent(syspath, 'remove')
testbed.remove_device(syspath)

try:
    sys.exit(process.wait(timeout=30))
except subprocess.TimeoutExpired:
    process.kill()
    sys.exit('child did not finish')

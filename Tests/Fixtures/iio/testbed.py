#!/usr/bin/python3
"""umockdev testbed controller for the IIO end-to-end tests (run under `umockdev-wrapper`, always
inside `timeout`).

Usage: umockdev-wrapper /usr/bin/python3 testbed.py LOG -- DAEMON [ARGS...]

Creates an empty testbed, starts DAEMON with UMOCKDEV_DIR pointing at it (stdout and stderr to
LOG), then obeys one command per line on stdin (fields separated by tabs) and answers each with
one line on stdout: "ok[<TAB>result]" or "error<TAB>message".

  add FILE                      devices from a .umockdev file (uevent "add" is sent for each)
  script DEVNODE FILE           feed DEVNODE from a umockdev script (clock starts now)
  ioctl DEVNODE FILE            answer DEVNODE's ioctls from a recording (an evdev node's, before `add`)
  evemu DEVNODE FILE            feed DEVNODE from evemu events (a keyboard typing)
  set SYSPATH ATTRIBUTE VALUE   rewrite an attribute in place (VALUE gets the trailing newline)
  get SYSPATH ATTRIBUTE         "ok<TAB>VALUE": the attribute as the daemon left it (trailing newline removed)
  uevent SYSPATH ACTION         send a uevent (change, …)
  remove SYSPATH                uevent "remove" (0.17 does not send it), then remove the device
  daemon-alive                  "ok<TAB>1" while the daemon runs
  stop                          SIGTERM the daemon, wait up to 5 s (then SIGKILL); answers its status

End of input stops the daemon too. The controller then exits with os._exit, so script runner
threads still blocked on a full PTY cannot hang it (docs/iio.md §12.8).
"""
import ctypes
import os
import signal
import subprocess
import sys

import gi

gi.require_version('UMockdev', '1.0')
from gi.repository import UMockdev  # noqa: E402

log_path, separator, daemon = sys.argv[1], sys.argv[2], sys.argv[3:]
assert separator == '--' and daemon, __doc__

testbed = UMockdev.Testbed.new()
environment = dict(os.environ, UMOCKDEV_DIR=testbed.get_root_dir())
log = open(log_path, 'ab', buffering=0)


def die_with_controller():
    # PR_SET_PDEATHSIG (1): if this controller dies, even by an assertion in libumockdev, the
    # daemon gets SIGTERM instead of outliving the test.
    ctypes.CDLL('libc.so.6', use_errno=True).prctl(1, signal.SIGTERM)


process = subprocess.Popen(daemon, env=environment, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                           preexec_fn=die_with_controller)


def stop_daemon():
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return process.returncode


def answer(text):
    sys.stdout.write(text + '\n')
    sys.stdout.flush()


for line in sys.stdin:
    fields = line.rstrip('\n').split('\t')
    command, arguments = fields[0], fields[1:]
    try:
        if command == 'add':
            with open(arguments[0]) as description:
                text = description.read()
            if not testbed.add_from_string(text):
                raise RuntimeError('add_from_string failed')
            answer('ok')
        elif command == 'script':
            if not testbed.load_script(arguments[0], arguments[1]):
                raise RuntimeError('load_script failed')
            answer('ok')
        elif command == 'ioctl':
            if not testbed.load_ioctl(arguments[0], arguments[1]):
                raise RuntimeError('load_ioctl failed')
            answer('ok')
        elif command == 'evemu':
            if not testbed.load_evemu_events(arguments[0], arguments[1]):
                raise RuntimeError('load_evemu_events failed')
            answer('ok')
        elif command == 'set':
            path = testbed.get_root_dir() + arguments[0] + '/' + arguments[1]
            with open(path, 'r+b') as attribute:   # in place, as sysfs does (docs/iio.md §12.8)
                attribute.truncate(0)
                attribute.write((arguments[2] + '\n').encode())
            answer('ok')
        elif command == 'get':
            with open(testbed.get_root_dir() + arguments[0] + '/' + arguments[1], 'rb') as attribute:
                answer('ok\t' + attribute.read().decode(errors='replace').rstrip('\n'))
        elif command == 'uevent':
            testbed.uevent(arguments[0], arguments[1])
            answer('ok')
        elif command == 'remove':
            testbed.uevent(arguments[0], 'remove')
            testbed.remove_device(arguments[0])
            answer('ok')
        elif command == 'daemon-alive':
            answer('ok\t%d' % (1 if process.poll() is None else 0))
        elif command == 'stop':
            answer('ok\t%s' % stop_daemon())
        else:
            answer('error\tunknown command ' + command)
    except Exception as error:  # noqa: BLE001 - reported to the test, which fails with it
        answer('error\t%s' % error)

stop_daemon()
log.close()
sys.stdout.flush()
os._exit(0)

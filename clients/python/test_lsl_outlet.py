"""python -m sensorkit.lsl against a live sensorkitd recording a generated 200 Hz accelerometer
(sample i: x = (i mod 1000)/1000 g, y = -x, z = 1 g), read by a pylsl inlet as LabRecorder reads
one. Run by SensorExportTests' LSLOutletTests, which starts the daemon, points SENSORKIT_SOCKET at
it through a link, and restarts it when this test asks (SENSORKIT_TEST_CONTROL/restart →
restarted). Without them, or without pylsl (the venv scripts/install-deps.sh builds), it fails."""
import os
import subprocess
import sys
import time
import unittest

import pylsl

from sensorkit_client import ACCELEROMETER, SensorKitClient

APP = os.environ.get("SENSORKIT_TEST_APP")
CONTROL = os.environ.get("SENSORKIT_TEST_CONTROL")
HERE = os.path.dirname(os.path.abspath(__file__))


def until(seconds, condition, every=0.05):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(every)
    return condition()


def boot_minus_local_clock(tries=64):
    """This test's own CLOCK_BOOTTIME − pylsl.local_clock() (seconds) and its uncertainty: of
    `tries` boot-clock reads, each between two local_clock() reads, the one bracketed most tightly;
    the offset to the bracket's middle is exact to half its width. Measured here, not with the
    outlet's ClockMapping, so a wrong mapping in the outlet cannot agree with itself."""
    best = None
    for _ in range(tries):
        before = pylsl.local_clock()
        boot = time.clock_gettime(time.CLOCK_BOOTTIME)
        after = pylsl.local_clock()
        if best is None or after - before < best[1]:
            best = (boot - (before + after) / 2, after - before)
    return best[0], best[1] / 2


class LSLOutletTests(unittest.TestCase):
    def setUp(self):
        if not (APP and CONTROL and os.environ.get("SENSORKIT_SOCKET")):
            raise RuntimeError("needs a live daemon: run through LSLOutletTests (make test)")
        self.host = "sensorkit-test-%d" % os.getpid()  # this run's streams only, whoever else runs LSL here
        self.log = open(os.path.join(CONTROL, "outlet.log"), "w")
        self.outlet = subprocess.Popen(
            [sys.executable, "-m", "sensorkit.lsl", "--app", APP, "--host", self.host, "accelerometer"],
            cwd=HERE, stdout=self.log, stderr=self.log)

    def tearDown(self):
        self.outlet.terminate()
        try:
            self.outlet.wait(10)
        except subprocess.TimeoutExpired:
            self.outlet.kill()
        self.log.close()

    def outlet_log(self):
        with open(os.path.join(CONTROL, "outlet.log")) as f:
            return f.read()

    def pull(self, inlet, seconds):
        samples = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            chunk, stamps = inlet.pull_chunk(timeout=0.1)
            samples += zip(stamps, chunk)
        return samples

    def check_against_the_daemon(self, samples, what):
        """Every inlet sample is the daemon's, once, in order, its values exact and its timestamp
        within 1 ms of where its sensor time falls on local_clock(). The daemon's sample times are
        SR ns: CLOCK_BOOTTIME plus the boot's anchor from `hello` (docs/protocol.md §9), so the
        expected LSL time is (sr − anchor)/1e9 − (CLOCK_BOOTTIME − local_clock()), that offset
        measured by this test; the tolerance widens by this measurement's own uncertainty (half its
        tightest bracket, microseconds) so that only the outlet's error can use up the 1 ms."""
        with SensorKitClient(timeout=30) as client:
            anchor = client.hello(APP)["timeline"]["anchor"]
            offset, uncertainty = boot_minus_local_clock()

            def expected(sr_ns):
                return (sr_ns - anchor) / 1e9 - offset

            def sr(stamp):
                return int(round((stamp + offset) * 1e9)) + anchor
            low, high = sr(samples[0][0]) - 2_500_000, sr(samples[-1][0]) + 2_500_000

            def fetched():
                merged, _ = client.fetch_all(ACCELEROMETER, low, high)
                return merged or {"sensor_times": [], "columns": {}}
            until(10, lambda: len(fetched()["sensor_times"]) >= len(samples))
            stored = fetched()
            boot_now = time.clock_gettime(time.CLOCK_BOOTTIME)
        self.assertEqual(len(stored["sensor_times"]), len(samples), "%s: every sample once" % what)
        # The anchor is the one sample times are on: the newest sample was read from the boot clock
        # within the last seconds (what the offset check below could not see if both were wrong).
        newest = (stored["sensor_times"][-1] - anchor) / 1e9
        self.assertTrue(boot_now - 30 < newest <= boot_now, "%s: sample times on CLOCK_BOOTTIME + anchor: %.3f s, now %.3f s" % (what, newest, boot_now))
        tolerance = 0.001 + uncertainty
        for i, (stamp, values) in enumerate(samples):
            self.assertEqual(values, [stored["columns"][c][i] for c in ("x", "y", "z")], "%s: sample %d exact" % (what, i))
            self.assertLess(abs(expected(stored["sensor_times"][i]) - stamp), tolerance,
                            "%s: sample %d within 1 ms (+%.1f µs of this test's offset measurement) of its sensor time on local_clock(): off by %.3f ms"
                            % (what, i, uncertainty * 1e6, (stamp - expected(stored["sensor_times"][i])) * 1e3))

    def test_every_sample_once_with_mapped_times_and_through_a_restart(self):
        found = pylsl.resolve_byprop("source_id", "sensorkitd:%s:%s:host" % (self.host, ACCELEROMETER), 1, 20)
        self.assertTrue(found, "no outlet within 20 s:\n" + self.outlet_log())
        info = found[0]
        inlet = pylsl.StreamInlet(info, max_buflen=60, processing_flags=0)
        full = inlet.info(timeout=10)
        self.assertEqual((full.channel_count(), full.channel_format(), full.nominal_srate()), (3, pylsl.cf_double64, 200.0))
        channel = full.desc().child("channels").child("channel")
        labels = []
        while not channel.empty():
            labels.append((channel.child_value("label"), channel.child_value("unit")))
            channel = channel.next_sibling()
        self.assertEqual(labels, [("x", "g"), ("y", "g"), ("z", "g")])
        inlet.open_stream(timeout=10)

        before = self.pull(inlet, 1.5)
        self.assertGreater(len(before), 200, self.outlet_log())
        stamps = [s for s, _ in before]
        self.assertEqual(stamps, sorted(set(stamps)), "in order, each once")
        for _, (x, y, z) in before:
            self.assertEqual((y, z), (-x, 1.0))
        self.check_against_the_daemon(before, "before the restart")

        open(os.path.join(CONTROL, "restart"), "w").close()
        self.assertTrue(until(60, lambda: os.path.exists(os.path.join(CONTROL, "restarted"))), "the daemon was not restarted")
        after = []
        self.assertTrue(until(20, lambda: after.extend(self.pull(inlet, 0.2)) or
                              any(s > stamps[-1] + 0.5 for s, _ in after)),
                        "no samples after the restart:\n" + self.outlet_log())
        after += self.pull(inlet, 1.5)
        all_stamps = stamps + [s for s, _ in after]
        self.assertEqual(all_stamps, sorted(set(all_stamps)), "in order across the restart")
        # The restart is the one long silence; what follows it is the new daemon's.
        jumps = [(b - a, i) for i, (a, b) in enumerate(zip(all_stamps, all_stamps[1:]))]
        _, cut = max(jumps)
        fresh = after[cut + 1 - len(stamps):]
        self.assertGreater(len(fresh), 200)
        self.check_against_the_daemon(fresh, "after the restart")


if __name__ == "__main__":
    unittest.main()

"""The sensorkit package against a live sensorkitd recording a generated accelerometer (sample i:
x = (i mod 1000) / 1000 g, y = -x, z = 1 g). Run by SensorExportTests' PythonClientLiveTests,
which starts the daemon and sets SENSORKIT_SOCKET and SENSORKIT_TEST_APP; without them every test fails
(a skip would let a run that checked nothing pass). pandas and NumPy are required: their reads are what
these tests exist to check, and `make test` installs them (python3-pandas, python3-numpy)."""
import asyncio
import os
import subprocess
import sys
import time
import unittest

import pandas  # noqa: F401  (the dataframe test's extra; an ImportError here fails the run loudly)

import sensorkit

APP = os.environ.get("SENSORKIT_TEST_APP")
HERE = os.path.dirname(os.path.abspath(__file__))


class LiveDaemonTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (APP and os.environ.get("SENSORKIT_SOCKET")):
            raise RuntimeError("needs a live daemon: run through PythonClientLiveTests (make test), which sets "
                               "SENSORKIT_SOCKET and SENSORKIT_TEST_APP")
        with sensorkit.Study(APP) as study:
            study.client.start_recording(sensorkit.ACCELEROMETER)
            cls.start = study.now_ns()
        time.sleep(1.0)
        with sensorkit.Study(APP) as study:
            cls.until = study.now_ns()
        time.sleep(1.0)  # the daemon's pipeline has stored everything up to `until` by now

    def study(self):
        return sensorkit.Study(APP, hold="0")

    def test_plain_iteration_gives_the_generated_signal(self):
        with self.study() as study:
            rows = 0
            for batch in study.batches("accelerometer", since=self.start, until=self.until):
                cols = batch["columns"]
                for i in range(batch["count"]):
                    self.assertEqual(cols["z"][i], 1.0)
                    self.assertEqual(cols["y"][i], -cols["x"][i])
                rows += batch["count"]
            self.assertGreater(rows, 50)
            self.assertEqual(study.client.last_fetch["count"], rows)

    def test_async_iteration_sees_the_same_samples(self):
        async def read():
            times = []
            async with sensorkit.AsyncStudy(APP, hold="0") as study:
                async for batch in study.batches("accelerometer", since=self.start, until=self.until):
                    times += batch["sensor_times"]
            return times
        times = asyncio.run(read())
        with self.study() as study:
            plain = [t for b in study.batches("accelerometer", since=self.start, until=self.until) for t in b["sensor_times"]]
        self.assertEqual(times, plain)

    def test_dataframe_and_arrays(self):
        with self.study() as study:
            frame = study.dataframe("accelerometer", since=self.start, until=self.until)
            arrays = study.arrays("accelerometer", since=self.start, until=self.until)
        self.assertEqual(len(frame), len(arrays["sr_time"]))
        self.assertTrue((frame["z"] == 1.0).all())
        self.assertTrue(frame["sr_time"].is_monotonic_increasing)
        # Wall-clock times are today's, give or take the test's run.
        age = time.time() - frame["wall_time"].iloc[-1].timestamp()
        self.assertLess(abs(age), 3600)

    def test_live_subscription_plain_and_async(self):
        # Two subscribers at once, one plain and one async: both see the same samples, each once, in order.
        async def read_async(count):
            times = []
            async with sensorkit.AsyncStudy(APP, hold="0") as study:
                async for item in study.live("accelerometer", events=True):
                    if "event" in item:
                        self.assertEqual(item["event"], "subscribed")
                        continue
                    times += item["sensor_times"]
                    if len(times) >= count:
                        break
            return times

        with self.study() as study:
            live = study.live("accelerometer")
            first = next(live)
            times = list(first["sensor_times"])
            self.assertEqual(first["columns"]["z"][0], 1.0)
            theirs = asyncio.run(read_async(200))
            for batch in live:
                times += batch["sensor_times"]
                if times[-1] >= theirs[-1]:
                    break
            live.close()  # cancels the subscription; the connection stays usable
            self.assertEqual(study.client.last_fetch["error"]["code"], 108)
        self.assertEqual(times, sorted(set(times)), "every sample once, in order")
        self.assertTrue(set(theirs) <= set(times), "the async subscriber saw the same samples")
        self.assertGreaterEqual(len(theirs), 200)

    def test_examples_run(self):
        env = dict(os.environ, SENSORKIT_APP=APP, SENSORKIT_HOLD="0", SENSORKIT_SINCE=str(self.start),
                   SENSORKIT_UNTIL=str(self.until))
        for example in ["accelerometer.py", "deletion_records.py"]:
            result = subprocess.run([sys.executable, os.path.join(HERE, "examples", example)], env=env,
                                    capture_output=True, text=True, timeout=60)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("samples", result.stdout)


if __name__ == "__main__":
    unittest.main()

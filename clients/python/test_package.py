"""The sensorkit package without a daemon: arrays and data frames from batches, wall-clock times.
NumPy and pandas are required here, not optional: their conversions are what these tests exist to check,
and `make test` installs them (python3-numpy, python3-pandas). A missing one fails the run."""
import unittest

import numpy
import pandas  # noqa: F401  (to_dataframe imports it itself; imported here so its absence fails loudly)

import sensorkit

ORIGIN = 86_400 * 10**9  # the timeline founded on 2001-01-02 (CF-epoch ns)


def motion(times, xs):
    return {"count": len(times), "layout": 1, "sensor_times": list(times), "write_times": [t + 5 for t in times],
            "columns": {"x": list(xs), "y": [-x for x in xs], "z": [1.0] * len(xs)}, "ragged": []}


class PackageTests(unittest.TestCase):
    def test_wall_clock_is_origin_plus_sr_time(self):
        # 2001-01-02 00:00:00.000000001 UTC
        self.assertEqual(sensorkit.wall_clock_ns(1, ORIGIN), (978_307_200 + 86_400) * 10**9 + 1)

    def test_arrays_concatenate_batches(self):
        arrays = sensorkit.to_arrays([motion([1, 2], [0.5, 0.25]), motion([3], [0.125])], ORIGIN)
        self.assertEqual(arrays["sr_time"].tolist(), [1, 2, 3])
        self.assertEqual(arrays["receive_sr_time"].tolist(), [6, 7, 8])
        self.assertEqual(arrays["x"].tolist(), [0.5, 0.25, 0.125])
        self.assertEqual(arrays["wall_time"][0], numpy.datetime64("2001-01-02T00:00:00.000000001"))
        empty = sensorkit.to_arrays([], ORIGIN)
        self.assertEqual(len(empty["sr_time"]), 0)

    def test_rr_intervals_are_split_per_sample(self):
        batch = {"count": 3, "layout": 5, "sensor_times": [1, 2, 3], "write_times": [1, 2, 3],
                 "columns": {"bpm": [60.0, 61.0, 62.0], "confidence": [3.0, 3.0, 3.0], "rrCount": [2.0, 0.0, 1.0]},
                 "ragged": [0.9, 1.0, 0.95]}
        arrays = sensorkit.to_arrays([batch], ORIGIN)
        self.assertEqual([a.tolist() for a in arrays["rr_intervals_s"]], [[0.9, 1.0], [], [0.95]])

    def test_dataframe_has_sr_and_utc_wall_clock_columns(self):
        frame = sensorkit.to_dataframe([motion([1, 2], [0.5, 0.25])], ORIGIN)
        self.assertEqual(list(frame.columns), ["sr_time", "receive_sr_time", "wall_time", "x", "y", "z"])
        self.assertEqual(str(frame["wall_time"].dt.tz), "UTC")
        self.assertEqual(frame["sr_time"].tolist(), [1, 2])


if __name__ == "__main__":
    unittest.main()

"""Deletion records: what was deleted (start, end, reason), for any sensor; here the accelerometer's."""
from _common import show, study, window

with study() as s:
    show("accelerometer.tombstones", s.batches("accelerometer.tombstones", *window()), ["endTime", "reason"])

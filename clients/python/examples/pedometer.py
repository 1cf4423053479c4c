"""Pedometer: steps per interval; the sample's SR time is the interval's start, endTime its end."""
from _common import show, study, window

with study() as s:
    show("pedometerData", s.batches("pedometerData", *window()), ["endTime", "steps"])

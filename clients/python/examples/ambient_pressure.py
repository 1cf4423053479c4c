"""Pressure: kPa and °C (temperature NaN when the chip has no thermometer)."""
from _common import show, study, window

with study() as s:
    show("ambientPressure", s.batches("ambientPressure", *window()), ["pressure", "temperature"])

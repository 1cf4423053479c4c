"""Ambient light: lux, CIE 1931 chromaticity and the sensor's placement."""
from _common import show, study, window

with study() as s:
    show("ambientLightSensor", s.batches("ambientLightSensor", *window()), ["lux", "chromaticityX", "chromaticityY", "placement"])

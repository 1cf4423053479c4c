"""Motion: gyroscope rotation rate (rad/s), plain batches, standard library only."""
from _common import show, study, window

with study() as s:
    show("rotationRate", s.batches("rotationRate", *window()), ["x", "y", "z"])

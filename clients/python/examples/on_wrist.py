"""On-wrist state: one sample per change (onWrist 0/1, wrist location, crown orientation)."""
from _common import show, study, window

with study() as s:
    show("onWristState", s.batches("onWristState", *window()), ["onWrist", "wristLocation", "crownOrientation"])

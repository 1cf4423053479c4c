"""PPG: four optical channels and ambient, raw counts from the device."""
from _common import show, study, window

with study() as s:
    show("photoplethysmogram", s.batches("photoplethysmogram", *window()), ["ppg0", "ppg1", "ppg2", "ppg3", "ambient"])

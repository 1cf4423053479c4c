"""PPG: raw counts from the device. Layout 15 has twenty optical channels, ambient and a status
word; a stream stores only its PMD frame type's (type 0: ppg0-ppg2 and ambient; 7: ppg0-ppg15 and
status; 10: ppg0-ppg19 and status), the rest are NaN (docs/protocol.md section 5.2)."""
from _common import show, study, window

with study() as s:
    show("photoplethysmogram", s.batches("photoplethysmogram", *window()), ["ppg0", "ppg1", "ppg2", "ambient", "status"])

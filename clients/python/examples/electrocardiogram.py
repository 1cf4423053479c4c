"""ECG: µV per row with lead, flags, frequency (Hz) and the session it belongs to, as NumPy arrays."""
from _common import study, window

with study() as s:
    try:
        arrays = s.arrays("electrocardiogram", *window())
    except ImportError:
        raise SystemExit("this example needs NumPy: pip install './clients/python[numpy]'")
    print("electrocardiogram: %d rows in %d sessions" % (len(arrays["sr_time"]), len(set(arrays["sessionStart"].tolist()))))

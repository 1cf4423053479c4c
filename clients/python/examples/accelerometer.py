"""Motion: accelerometer (g) as a pandas DataFrame when pandas is there, else plain batches.
The same code reads rotationRate (rad/s): pass `rotationRate` instead."""
from _common import show, study, window

with study() as s:
    since, until = window()
    try:
        frame = s.dataframe("accelerometer", since, until)
    except ImportError:
        show("accelerometer", s.batches("accelerometer", since, until), ["x", "y", "z"])
    else:
        print(frame[["wall_time", "x", "y", "z"]].describe(include="all"))
        print("accelerometer: %d samples" % len(frame))

"""sensorkit: sensorkitd's data for researchers (docs/protocol.md; the wire client is sensorkit_client).

    import sensorkit
    with sensorkit.Study("org.example.study") as study:
        for batch in study.batches("accelerometer", since="now-48h", until="now-24h"):
            ...                                   # plain dicts of lists, standard library only
        frame = study.dataframe("accelerometer")  # pandas (pip install './clients/python[pandas]')
        arrays = study.arrays("accelerometer")    # NumPy  (pip install './clients/python[numpy]')

    async with sensorkit.AsyncStudy("org.example.study") as study:
        async for batch in study.batches("heartRate"):
            ...

    with sensorkit.Study("org.example.rig") as study:   # live, as recorded (hold 0: the lab profile)
        for batch in study.live("accelerometer"):
            ...
    # python -m sensorkit.lsl accelerometer   (Lab Streaming Layer outlets; pylsl, the [lsl] extra)
"""
from sensorkit_client import (  # noqa: F401  (the wire client, re-exported)
    ACCELEROMETER, AMBIENT_LIGHT, AMBIENT_PRESSURE, ECG, HEART_RATE, ON_WRIST, PEDOMETER, PPG, ROTATION_RATE,
    SENSOR_NAMES, ProtocolError, SensorKitClient, SensorKitError, deletion_records,
)
from .study import AsyncStudy, Study, wall_clock_ns  # noqa: F401
from .frames import to_arrays, to_dataframe  # noqa: F401

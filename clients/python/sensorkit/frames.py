"""A fetch's batches as NumPy arrays or a pandas DataFrame (optional extras; imported on use).

Columns: `sr_time` (int64 SR ns), `receive_sr_time` (int64 SR ns, when the daemon received the
sample), `wall_time` (UTC, origin + SR time: docs/export.md), then the layout's values in
SensorKit units (docs/protocol.md §5.2). Heart rate's RR intervals become `rr_intervals_s`, one
array per sample."""


def _numpy():
    try:
        import numpy
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("sensorkit arrays need NumPy: pip install './clients/python[numpy]'") from error
    return numpy


def to_arrays(batches, origin_ns):
    """dict of NumPy arrays: sr_time, receive_sr_time, wall_time (datetime64[ns]), each value
    column (float64), and rr_intervals_s (object array of float64 arrays) for heart rate."""
    np = _numpy()
    sensor_times, write_times, columns, ragged, counts = [], [], {}, [], []
    names = None
    for batch in batches:
        names = names or list(batch["columns"])
        sensor_times.append(np.asarray(batch["sensor_times"], dtype=np.int64))
        write_times.append(np.asarray(batch["write_times"], dtype=np.int64))
        for name in names:
            columns.setdefault(name, []).append(np.asarray(batch["columns"][name], dtype=np.float64))
        if "rrCount" in batch["columns"]:
            ragged.append(np.asarray(batch["ragged"], dtype=np.float64))
            counts.append(np.asarray(batch["columns"]["rrCount"], dtype=np.int64))
    join = (lambda parts, dtype: np.concatenate(parts) if parts else np.empty(0, dtype=dtype))
    sr = join(sensor_times, np.int64)
    result = {
        "sr_time": sr,
        "receive_sr_time": join(write_times, np.int64),
        "wall_time": (sr + np.int64(origin_ns) + np.int64(978_307_200 * 10**9)).astype("datetime64[ns]"),
    }
    for name in names or []:
        result[name] = join(columns[name], np.float64)
    if counts:
        lists = []
        for values, per_sample in zip(ragged, counts):
            lists.extend(np.split(values, np.cumsum(per_sample)[:-1]) if len(per_sample) else [])
        rr = np.empty(len(lists), dtype=object)
        rr[:] = lists
        result["rr_intervals_s"] = rr
    return result


def to_dataframe(batches, origin_ns):
    """A pandas DataFrame with the columns of to_arrays; wall_time is timezone-aware UTC."""
    try:
        import pandas
    except ImportError as error:  # pragma: no cover - depends on the installation
        raise ImportError("sensorkit data frames need pandas: pip install './clients/python[pandas]'") from error
    arrays = to_arrays(batches, origin_ns)
    frame = pandas.DataFrame(arrays)
    frame["wall_time"] = frame["wall_time"].dt.tz_localize("UTC")
    return frame

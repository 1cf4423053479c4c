#!/usr/bin/env python3
"""Anchors for the "store" section of sensorkit-bench, measured on the same data in the same run.

Usage: store_anchors.py MANIFEST.json
The manifest lists streams: {"name", "path", "count", "columns": [names], "types": [arrow types]}.
Each data file holds the columns one after another (column-major), little-endian int64: the
sensor time in ns first, then the value columns.

For every stream it measures, one core, on a one-day table or file:
  sqlite_rows    python's sqlite3, one row per sample, `t INTEGER PRIMARY KEY` (no extra index)
  csv_gz         CSV written by pyarrow (or the csv module), gzip level 6 (the gzip CLI default)
  parquet_zstd   pyarrow defaults with compression="zstd"
  parquet_best   DELTA_BINARY_PACKED for every column, no dictionary, zstd level 19
and prints one JSON object on stdout: {stream: {anchor: {bytes_per_sample, ingest_cpu_s_per_m,
query_samples_per_s, purge_s, note}}}. An anchor that cannot run says {"error": "..."}.
Purge is deleting one day: for SQLite a DELETE of the day's rows, for the files an unlink.
"""
import gzip
import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from array import array


def ensure_pyarrow():
    try:
        import pyarrow  # noqa: F401
        return True, None
    except ImportError:
        pass
    try:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "pyarrow"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=600)
        import pyarrow  # noqa: F401
        return True, None
    except Exception as error:  # no network, no pip, no wheel for this platform
        return False, "not available (pyarrow: %s)" % type(error).__name__


def load_columns(stream):
    count = stream["count"]
    names = ["t"] + stream["columns"]
    raw = open(stream["path"], "rb").read()
    columns = {}
    for index, name in enumerate(names):
        column = array("q")
        column.frombytes(raw[index * count * 8:(index + 1) * count * 8])
        if sys.byteorder != "little":
            column.byteswap()
        columns[name] = column
    return names, columns


def arrow_int64(column):
    """A zero-copy Arrow view of an array('q')."""
    import pyarrow as pa
    return pa.Array.from_buffers(pa.int64(), len(column), [None, pa.py_buffer(column)])


def cpu():
    return time.process_time()


def sqlite_rows(stream, names, columns, workdir):
    path = os.path.join(workdir, stream["name"] + ".sqlite")
    count = stream["count"]
    db = sqlite3.connect(path)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=NORMAL")
    values = ", ".join(["?"] * len(names))
    db.execute("CREATE TABLE samples (t INTEGER PRIMARY KEY, %s)" % ", ".join(n + " INTEGER" for n in names[1:]))
    start = cpu()
    with db:
        db.executemany("INSERT INTO samples VALUES (%s)" % values, zip(*(columns[n] for n in names)))
    ingest = cpu() - start
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    size = os.path.getsize(path)
    # Decoding every row in C (sums of every column), not Python's per-row objects.
    start = time.perf_counter()
    db.execute("SELECT count(*), %s FROM samples" % ", ".join("total(%s)" % n for n in names)).fetchone()
    query = time.perf_counter() - start
    start = time.perf_counter()
    with db:
        db.execute("DELETE FROM samples WHERE t <= ?", (max(columns["t"]),))
    purge = time.perf_counter() - start
    db.close()
    os.remove(path)
    return {"bytes_per_sample": size / count, "ingest_cpu_s_per_m": ingest / count * 1e6,
            "query_samples_per_s": count / query, "purge_s": purge,
            "note": "python sqlite3 executemany; query = SELECT sums in SQL; purge = DELETE one day of rows"}


def csv_gz(stream, names, columns, workdir, have_arrow):
    path = os.path.join(workdir, stream["name"] + ".csv.gz")
    count = stream["count"]
    start = cpu()
    if have_arrow:
        import pyarrow as pa
        import pyarrow.csv as pacsv
        table = pa.table({n: arrow_int64(columns[n]) for n in names})
        sink = io.BytesIO()
        pacsv.write_csv(table, sink)
        text = sink.getvalue()
    else:
        text = ("\n".join(",".join(map(str, row)) for row in zip(*(columns[n] for n in names))) + "\n").encode()
    with open(path, "wb") as out:
        out.write(gzip.compress(text, compresslevel=6))
    ingest = cpu() - start
    size = os.path.getsize(path)
    start = time.perf_counter()
    data = gzip.decompress(open(path, "rb").read())
    if have_arrow:
        import pyarrow.csv as pacsv
        pacsv.read_csv(io.BytesIO(data), read_options=pacsv.ReadOptions(use_threads=False))
    else:
        sum(1 for _ in data.splitlines())
    query = time.perf_counter() - start
    start = time.perf_counter()
    os.remove(path)
    purge = time.perf_counter() - start
    return {"bytes_per_sample": size / count, "ingest_cpu_s_per_m": ingest / count * 1e6,
            "query_samples_per_s": count / query, "purge_s": purge,
            "note": "gzip level 6; query = gunzip + parse (pyarrow, one thread); purge = unlink a day file"}


def parquet(stream, names, columns, workdir, best):
    import pyarrow as pa
    import pyarrow.parquet as pq
    path = os.path.join(workdir, stream["name"] + (".best" if best else "") + ".parquet")
    count = stream["count"]
    types = {"int16": pa.int16(), "int32": pa.int32(), "int64": pa.int64()}
    pa.set_cpu_count(1)
    pa.set_io_thread_count(1)
    start = cpu()
    table = pa.table({n: arrow_int64(columns[n]).cast(types[t])
                      for n, t in zip(names, ["int64"] + stream["types"])})
    if best:
        pq.write_table(table, path, compression="zstd", compression_level=19, use_dictionary=False,
                       column_encoding={n: "DELTA_BINARY_PACKED" for n in names})
    else:
        pq.write_table(table, path, compression="zstd")
    ingest = cpu() - start
    size = os.path.getsize(path)
    start = time.perf_counter()
    pq.read_table(path, use_threads=False)
    query = time.perf_counter() - start
    start = time.perf_counter()
    os.remove(path)
    purge = time.perf_counter() - start
    return {"bytes_per_sample": size / count, "ingest_cpu_s_per_m": ingest / count * 1e6,
            "query_samples_per_s": count / query, "purge_s": purge,
            "note": ("DELTA_BINARY_PACKED, zstd 19" if best else "zstd (pyarrow default level)")
            + "; pyarrow %s, one thread; purge = unlink a day file" % pa.__version__}


def guarded(function, *arguments):
    try:
        return function(*arguments)
    except Exception as error:
        return {"error": "%s: %s" % (type(error).__name__, error)}


def main():
    manifest = json.load(open(sys.argv[1]))
    have_arrow, arrow_error = ensure_pyarrow()
    results = {}
    with tempfile.TemporaryDirectory(prefix="sensorkit-anchors-") as workdir:
        for stream in manifest["streams"]:
            names, columns = load_columns(stream)
            result = {
                "sqlite_rows": guarded(sqlite_rows, stream, names, columns, workdir),
                "csv_gz": guarded(csv_gz, stream, names, columns, workdir, have_arrow),
            }
            for key, best in (("parquet_zstd", False), ("parquet_best", True)):
                result[key] = guarded(parquet, stream, names, columns, workdir, best) if have_arrow \
                    else {"error": arrow_error}
            results[stream["name"]] = result
            print("anchors: %s done" % stream["name"], file=sys.stderr, flush=True)
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()

"""A study app's view of sensorkitd: one connection, times as people write them, plain and async
iteration over a fetch's batches and over a live subscription's."""
import asyncio

from sensorkit_client import SensorKitClient, _sensor_arg, _time_arg

CF_EPOCH_UNIX_NS = 978_307_200 * 10**9


def wall_clock_ns(sr_ns, origin_ns):
    """Unix ns of an SR time: the timeline's origin (CF-epoch ns, from hello) plus SR ns — the
    wall clock as it read when the sample's boot was anchored (docs/protocol.md §9.3), the same
    value sensorkit-export stores in wall_time (docs/export.md)."""
    return sr_ns + origin_ns + CF_EPOCH_UNIX_NS


class Study:
    """A connection acting as one study app. Sensors by Swift name (`accelerometer`,
    `heartRate`, ...) or raw value, `.tombstones` appended for deletion records; times as SR ns or
    `now`, `now-36h`. The default range is what SensorKit releases: (now - 7d, now - hold]."""

    def __init__(self, app, socket_path=None, timeout=30, hold="24h"):
        self.client = SensorKitClient(socket_path=socket_path, timeout=timeout)
        try:
            welcome = self.client.hello(app)
        except Exception:
            self.client.close()
            raise
        self.app = app
        self.origin_ns = welcome["timeline"]["origin"]
        self.hold = hold

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.client.close()

    def now_ns(self):
        return self.client.now_ns()

    def _range(self, since, until):
        now = self.client.now_ns
        since = "now-7d" if since is None else since
        if until is None:
            until = "now" if self.hold in ("0", "") else "now-" + self.hold
        return _time_arg(str(since), now), _time_arg(str(until), now)

    def batches(self, sensor, since=None, until=None, device="host"):
        """The fetch's batches (dicts: sensor_times, write_times, columns {name: [float]}, ragged),
        each acknowledged as the loop takes the next; leaving the loop cancels the fetch."""
        start, end = self._range(since, until)
        return self.client.fetch(_sensor_arg(sensor), start, end, device=device)

    def live(self, sensor, device="host", events=False, window=8):
        """The sensor's batches as the daemon records them (a live subscription, docs/live.md):
        released data only, so the daemon must run the sensor with a hold of 0 (the lab profile).
        With events=True the `subscribed` and `gap` events come too (dicts with "event"). Runs
        until the source stops or the loop is left (which cancels it); a subscriber that falls
        behind gets SensorKitError 111 with `missed`, the range to fetch."""
        return self.client.subscribe(_sensor_arg(sensor), device=device, window=window, events=events)

    def arrays(self, sensor, since=None, until=None, device="host"):
        """The fetch as NumPy arrays (needs the `numpy` extra): see sensorkit.to_arrays."""
        from .frames import to_arrays
        return to_arrays(self.batches(sensor, since, until, device), self.origin_ns)

    def dataframe(self, sensor, since=None, until=None, device="host"):
        """The fetch as a pandas DataFrame (needs the `pandas` extra): see sensorkit.to_dataframe."""
        from .frames import to_dataframe
        return to_dataframe(self.batches(sensor, since, until, device), self.origin_ns)


class AsyncStudy:
    """`Study` for asyncio code: the blocking socket work runs in a worker thread, one step at a time."""

    def __init__(self, app, socket_path=None, timeout=30, hold="24h"):
        self._arguments = (app, socket_path, timeout, hold)
        self.study = None

    async def __aenter__(self):
        self.study = await asyncio.to_thread(Study, *self._arguments)
        return self

    async def __aexit__(self, *exc):
        await asyncio.to_thread(self.study.close)

    async def batches(self, sensor, since=None, until=None, device="host"):
        generator = await asyncio.to_thread(self.study.batches, sensor, since, until, device)
        async for batch in self._iterate(generator):
            yield batch

    async def live(self, sensor, device="host", events=False, window=8):
        """`Study.live` for `async for`."""
        generator = await asyncio.to_thread(self.study.live, sensor, device, events, window)
        async for item in self._iterate(generator):
            yield item

    @staticmethod
    async def _iterate(generator):
        """Steps a blocking generator in a worker thread; leaving the loop closes it there."""
        done = object()
        try:
            while True:
                batch = await asyncio.to_thread(next, generator, done)
                if batch is done:
                    return
                yield batch
        finally:
            await asyncio.to_thread(generator.close)

    async def dataframe(self, sensor, since=None, until=None, device="host"):
        return await asyncio.to_thread(self.study.dataframe, sensor, since, until, device)

    async def arrays(self, sensor, since=None, until=None, device="host"):
        return await asyncio.to_thread(self.study.arrays, sensor, since, until, device)

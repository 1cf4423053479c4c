"""The participant's calls to sensorkitd: one short admin session per call (hello without an app),
so a daemon restart between two clicks costs nothing. The daemon decides who may see and change
what (a study's Consenters, root); its refusals come back as SensorKitError with its message."""
import time

from sensorkit_client import SensorKitClient

TIMEOUT_S = 10  # every call is bounded: a stuck daemon shows an error, never a frozen window


class Daemon:
    def __init__(self, socket_path=None):
        self.socket_path = socket_path

    def _call(self, method, *args, **kwargs):
        with SensorKitClient(self.socket_path, timeout=TIMEOUT_S) as client:
            client.hello()
            return getattr(client, method)(*args, **kwargs)

    def consent(self, app=None):
        return self._call("consent_list", app)

    def decide(self, app, decisions):
        return self._call("consent_decide", app, decisions)

    def stakes(self):
        return self._call("stakes")

    def health(self, from_ns, to_ns):
        return self._call("health", from_ns, to_ns)

    def delete(self, app, from_ns, to_ns, sensors=None):
        return self._call("delete_data", app, from_ns, to_ns, sensors)

    def now_and_offset(self):
        """The daemon's SR ns now and Unix ns minus SR ns."""
        unix = time.time_ns()
        now = self._call("now_ns")
        return now, unix - now

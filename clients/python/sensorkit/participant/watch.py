"""The participant's watch on sensorkitd: one admin session that asked `watchConsent`
(docs/protocol.md §3.10), read from the GLib main loop only when its socket has something, so
nothing wakes while no study asks. The daemon first says what waits now, then every change, as
`consentPending` events (app, sensors waiting). When the daemon goes away (restart, upgrade) or
refuses the watch, the watch connects again after 1 s, doubling up to 60 s; a watch in place
resets the delay. That timer runs only while there is no connection."""
import sys

from gi.repository import GLib

from sensorkit_client import ProtocolError, SensorKitClient, SensorKitError

TIMEOUT_S = 10  # hello and watchConsent are answered at once; a stuck daemon is retried, not waited on
FIRST_RETRY_S, LAST_RETRY_S = 1, 60


class ConsentWatch:
    def __init__(self, socket_path, on_pending):
        """`on_pending(app, sensors)` runs in the main loop for each consentPending event."""
        self.socket_path = socket_path
        self.on_pending = on_pending
        self.client = None
        self.source = None
        self.retry_s = FIRST_RETRY_S
        self.connections = 0  # watches put in place (the first one and reconnections)

    def start(self):
        GLib.idle_add(self._connect)

    def _connect(self):
        client = None
        try:
            client = SensorKitClient(self.socket_path, timeout=TIMEOUT_S, on_event=self._event)
            client.hello()
            client.watch_consent()
        except (OSError, ProtocolError, SensorKitError) as error:
            if client is not None:
                client.close()
            print("sensorkit-participant: cannot watch for consent requests (%s); again in %d s"
                  % (error, self.retry_s), file=sys.stderr)
            GLib.timeout_add_seconds(self.retry_s, self._connect)
            self.retry_s = min(self.retry_s * 2, LAST_RETRY_S)
            return False
        self.client = client
        self.retry_s = FIRST_RETRY_S
        self.connections += 1
        condition = GLib.IOCondition.IN | GLib.IOCondition.HUP | GLib.IOCondition.ERR
        self.source = GLib.unix_fd_add_full(GLib.PRIORITY_DEFAULT, client.fileno(), condition, self._readable)
        return False

    def _event(self, event):
        # Handed to the main loop: an event may arrive with the watch's own reply, while the
        # application is still being activated, before its windows can be shown.
        if event.get("event") == "consentPending" and isinstance(event.get("app"), str):
            GLib.idle_add(self._deliver, event["app"], list(event.get("sensors") or []))

    def _deliver(self, app, sensors):
        self.on_pending(app, sensors)
        return False

    def _readable(self, _fd, _condition):
        try:
            self.client.read_ready()
            return True
        except (OSError, ProtocolError, SensorKitError) as error:
            print("sensorkit-participant: the watch ended (%s)" % error, file=sys.stderr)
        self.client.close()
        self.client = None
        self.source = None
        GLib.timeout_add_seconds(self.retry_s, self._connect)
        self.retry_s = min(self.retry_s * 2, LAST_RETRY_S)
        return False

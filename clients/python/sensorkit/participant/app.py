"""The application: the panel when opened from the app grid, and with --watch the background
watcher that raises the authorization sheet when a study's requestAuthorization is pending. The
watcher waits on the daemon's consentPending events (`watch.ConsentWatch`): the daemon keeps
pending requests and says first what already waits, so a sheet also appears for a request made
while no session was running."""
import os
import sys

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Adw", "1")
from gi.repository import Adw, Gio, GLib, Gtk  # noqa: E402

from . import choices  # noqa: E402
from .daemon import Daemon  # noqa: E402
from .panel import ResearchDataWindow  # noqa: E402
from .sheet import AuthorizationSheet  # noqa: E402
from .watch import ConsentWatch  # noqa: E402

APP_ID = "org.sensorkit.Participant"


class ParticipantApp(Adw.Application):
    def __init__(self, watch=False, size=(360, 720)):
        super().__init__(application_id=APP_ID, flags=Gio.ApplicationFlags.NON_UNIQUE)
        self.daemon = Daemon(os.environ.get("SENSORKIT_SOCKET"))
        self.watch = watch
        self.size = size
        self.sheets = {}
        self.connect("activate", self._activate)

    def _activate(self, _app):
        if self.watch:
            self.hold()  # no window until a study asks
            self.consent_watch = ConsentWatch(self.daemon.socket_path, self._pending)
            self.consent_watch.start()
        else:
            self._show(ResearchDataWindow(self, self.daemon, *self.size), "panel")

    def _show(self, window, kind):
        window.present()

    def _pending(self, app, sensors):
        """A consentPending event: raise the study's sheet, or close it when the request was
        answered elsewhere (sensorkitctl consent, another session)."""
        if not sensors:
            window = self.sheets.pop(app, None)
            if window is not None:
                window.destroy()
            return
        if app in self.sheets:
            return
        try:
            sheets = self.daemon.consent(app)
        except Exception as error:  # the daemon went away: the watch's reconnection says it again
            print("sensorkit-participant: %s" % error, file=sys.stderr)
            return
        for sheet in sheets:
            if choices.pending_items(sheet) and sheet["app"] not in self.sheets:
                window = AuthorizationSheet(self, sheet, self._answered, *self.size)
                window.connect("close-request", lambda _w, app=sheet["app"]: self.sheets.pop(app, None) and False)
                self.sheets[sheet["app"]] = window
                self._show(window, "sheet")

    def _answered(self, window, app, decisions):
        try:
            self.daemon.decide(app, decisions)
        except Exception as error:
            print("sensorkit-participant: %s" % error, file=sys.stderr)
        self.sheets.pop(app, None)
        window.destroy()


def main(argv):
    watch = "--watch" in argv
    size = (360, 720)
    for i, word in enumerate(argv):
        if word == "--size" and i + 1 < len(argv):
            width, height = argv[i + 1].split("x")
            size = (int(width), int(height))
    GLib.set_prgname("sensorkit-participant")
    GLib.set_application_name("Research Sensor & Usage Data")
    return ParticipantApp(watch, size).run([argv[0]] if argv else [])

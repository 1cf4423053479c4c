"""The participant's GTK application against a live sensorkitd, driven through the accessibility
tree (AT-SPI) as a screen reader or a switch user would: the authorization sheet raised by a
pending requestAuthorization, switching a sensor and answering; the Research Sensor & Usage Data
panel listing studies, turning a sensor off and on, deleting a day; a sheet answered with the
keyboard alone (Tab, Space, Return through XTest). At a phone's and a tablet's size, each in portrait
and landscape, the window must fit the size asked for (its frame's extents, as AT-SPI reports them),
and a screenshot goes to $SENSORKIT_TEST_SCREENSHOTS: the pixels Xvfb shows
(its framebuffer file in $SENSORKIT_TEST_FRAMEBUFFER, `-fbdir`), cut to the window (no window
manager: the window sits at the top left) with netpbm.

Run by SensorExportTests' ParticipantUITests under xvfb-run and dbus-run-session, which starts the
daemon and sets SENSORKIT_SOCKET. Without a display, a session bus, GTK, libadwaita or AT-SPI every
test fails (a skip would pass a run that checked nothing)."""
import json
import os
import socket
import subprocess
import sys
import threading
import time
import unittest

import gi

gi.require_version("Atspi", "2.0")
gi.require_version("Gtk", "4.0")
gi.require_version("Adw", "1")
from gi.repository import Atspi  # noqa: E402

from sensorkit_client import ACCELEROMETER, AMBIENT_LIGHT, KIND_MESSAGE, FrameDecoder, SensorKitClient  # noqa: E402

STUDY, OTHER, LATER, KEYBOARD = "com.example.study", "com.example.other", "com.example.later", "com.example.keyboard"
SHOTS = os.environ.get("SENSORKIT_TEST_SCREENSHOTS", "")
FRAMEBUFFER = os.environ.get("SENSORKIT_TEST_FRAMEBUFFER", "")
HERE = os.path.dirname(os.path.abspath(__file__))
PHONE, TABLET = "360x720", "1280x800"
PHONE_LANDSCAPE, TABLET_PORTRAIT = "720x360", "800x1280"
KEY_TAB, KEY_SPACE, KEY_RETURN = 0xff09, 0x0020, 0xff0d  # X keysyms


def eventually(condition, seconds=20, every=0.1):
    """Waits for `condition()` to give something truthy (bounded), returns it or None."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(every)
    return condition()


def nodes(node, depth=0):
    if node is None or depth > 60:
        return
    yield node
    for i in range(node.get_child_count()):
        yield from nodes(node.get_child_at_index(i), depth + 1)


CURRENT = {"pid": None}  # the application process the test launched last


def application():
    desktop = Atspi.get_desktop(0)
    for i in range(desktop.get_child_count()):
        app = desktop.get_child_at_index(i)
        try:
            if app is not None and app.get_name() == "sensorkit-participant" \
                    and app.get_process_id() == CURRENT["pid"]:
                return app
        except Exception:  # an application that ended meanwhile
            continue
    return None


def spoken(label):
    """The name as a screen reader says it: GTK 4.8 joins a widget's own label (with its mnemonic
    underscore) and the label it is labelled by ("_Allow Allow"); both say the same."""
    half = len(label) // 2
    for cut in range(half - 1, half + 2):
        own, shown = label[:cut], label[cut + 1:]
        if label[cut:cut + 1] == " " and own.replace("_", "") == shown:
            return shown
    return label


def find(role, name=None, prefix=None):
    """The first accessible of the application with this role and spoken name (or name prefix)."""
    try:
        for node in nodes(application()):
            if role is not None and node.get_role_name() != role:
                continue
            label = spoken(node.get_name() or "")
            if (name is None or label == name) and (prefix is None or label.startswith(prefix)):
                return node
    except Exception:  # the tree changed while walking (a page replaced): the caller asks again
        return None
    return None


def press(node):
    """Activates a widget through its accessible action, as assistive technology does."""
    action = node.get_action_iface()
    if action is None or action.get_n_actions() == 0:
        raise AssertionError("%s %r offers no action" % (node.get_role_name(), node.get_name()))
    action.do_action(0)


def checked(node):
    states = node.get_state_set()
    return states.contains(Atspi.StateType.CHECKED) or states.contains(Atspi.StateType.PRESSED)


def window():
    """The application's top-level window (its frame), or None."""
    app = application()
    try:
        for i in range(app.get_child_count() if app is not None else 0):
            child = app.get_child_at_index(i)
            if child is not None and child.get_role_name() in ("frame", "window", "dialog"):
                return child
    except Exception:
        return None
    return None


def screen_extents(node):
    """Where a component is on the screen (x, y, width, height), or None while it has no size."""
    try:
        extents = node.get_component_iface().get_extents(Atspi.CoordType.SCREEN)
    except Exception:
        return None
    return extents if extents.width > 0 and extents.height > 0 else None


def focused():
    """The accessible that has the keyboard focus in the application, or None."""
    try:
        for node in nodes(application()):
            if node.get_state_set().contains(Atspi.StateType.FOCUSED):
                return node
    except Exception:
        return None
    return None


def key(keysym):
    """One key pressed and released, synthesised by the AT-SPI registry through XTest."""
    Atspi.generate_keyboard_event(keysym, None, Atspi.KeySynthType.SYM)
    time.sleep(0.15)


def tab_to(role, prefix, presses=30):
    """Tab until the focus is on the widget with this role and spoken name prefix; it, or None."""
    for _ in range(presses):
        node = focused()
        if node is not None and node.get_role_name() == role and spoken(node.get_name() or "").startswith(prefix):
            return node
        key(KEY_TAB)
    return None


def admin():
    client = SensorKitClient(timeout=10)
    client.hello()
    return client


def statuses(app):
    with admin() as client:
        sheet = client.consent_list(app)[0]
    return {item["sensor"]: (item["status"], item["pending"]) for item in sheet["items"]}


class CountingRelay:
    """A socket between the application and the daemon that passes every byte on and notes each
    request the application sends (its op, when) and each connection it opens: how the test sees
    from outside that the watcher makes no calls while nothing happens. `drop()` ends every
    connection at once, as a daemon restart does."""

    def __init__(self, daemon_socket, path):
        self.daemon_socket = daemon_socket
        self.path = path
        self.lock = threading.Lock()
        self.requests = []  # (time.monotonic(), op)
        self.connections = 0
        self.open = []
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def ops(self, since=0.0):
        with self.lock:
            return [op for at, op in self.requests if at >= since]

    def drop(self):
        with self.lock:
            pairs, self.open = self.open, []
        for pair in pairs:
            for end in pair:
                try:
                    end.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self):
        self.server.close()
        self.drop()

    def _accept(self):
        while True:
            try:
                app, _ = self.server.accept()
            except OSError:
                return
            daemon = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            daemon.connect(self.daemon_socket)
            with self.lock:
                self.connections += 1
                self.open.append((app, daemon))
            threading.Thread(target=self._copy, args=(daemon, app, None), daemon=True).start()
            threading.Thread(target=self._copy, args=(app, daemon, FrameDecoder()), daemon=True).start()

    def _copy(self, source, sink, decoder):
        try:
            while True:
                data = source.recv(65536)
                if not data:
                    break
                if decoder is not None:
                    decoder.feed(data)
                    while (frame := decoder.next()) is not None:
                        if frame[0] == KIND_MESSAGE:
                            with self.lock:
                                self.requests.append((time.monotonic(), json.loads(frame[1]).get("op")))
                sink.sendall(data)
        except OSError:
            pass
        for end in (source, sink):
            try:
                end.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class ParticipantUITests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.environ.get("SENSORKIT_SOCKET") or not SHOTS or not FRAMEBUFFER:
            raise RuntimeError("needs a live daemon and a screenshot folder: run through ParticipantUITests "
                               "(make test), which sets SENSORKIT_SOCKET and SENSORKIT_TEST_SCREENSHOTS")
        if not os.environ.get("DISPLAY") or not os.environ.get("DBUS_SESSION_BUS_ADDRESS"):
            raise RuntimeError("needs a display and a session bus (xvfb-run, dbus-run-session)")
        if Atspi.init() not in (0, 1):
            raise RuntimeError("AT-SPI did not start")

    def launch(self, *arguments, socket_path=None):
        environment = dict(os.environ, GSETTINGS_BACKEND="memory", GDK_BACKEND="x11")
        if socket_path:
            environment["SENSORKIT_SOCKET"] = socket_path
        process = subprocess.Popen(
            [sys.executable, "-m", "sensorkit.participant", *arguments], cwd=HERE, env=environment)
        CURRENT["pid"] = process.pid
        self.launched = process
        self.addCleanup(self.stop, process)
        return process

    @staticmethod
    def stop(process):
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def assert_fits(self, size):
        """The window is no wider and no taller than the screen asked for (GTK grows a window past
        its default size when its content needs more), and at least half of it (it is the window)."""
        width, height = (int(n) for n in size.split("x"))
        frame = eventually(window)
        self.assertIsNotNone(frame, "a window")
        extents = eventually(lambda: screen_extents(frame))
        self.assertIsNotNone(extents, "the window has extents")
        self.assertLessEqual(extents.width, width, "%s: the window is %dx%d" % (size, extents.width, extents.height))
        self.assertLessEqual(extents.height, height, "%s: the window is %dx%d" % (size, extents.width, extents.height))
        self.assertGreater(extents.width * 2, width)
        self.assertGreater(extents.height * 2, height)

    def screenshot(self, size):
        """The window as Xvfb shows it, a second after it settled (animations end), as a PNG."""
        time.sleep(1.0)
        width, height = size.split("x")
        path = os.path.join(SHOTS, "%s-%s.png" % (self.id().split(".")[-1], size))
        script = ("xwdtopnm %s 2>/dev/null | pamcut -left 0 -top 0 -width %s -height %s | pnmtopng > %s"
                  % (FRAMEBUFFER, width, height, path))
        subprocess.run(["/bin/sh", "-c", script], check=True, timeout=30)
        self.assertGreater(os.path.getsize(path), 2000, "a screenshot with something on it: %s" % path)

    def request(self, app, sensors):
        """An app's requestAuthorization, left waiting for a person (its connection stays open)."""
        client = SensorKitClient(timeout=30)
        self.addCleanup(client.close)
        client.hello(app)
        return client, client.request_authorization(sensors, wait=False)

    def test_1_sheet_switch_allow_writes_that_consent(self):
        client, request_id = self.request(STUDY, [ACCELEROMETER, AMBIENT_LIGHT])
        self.launch("--watch", "--size", PHONE)
        allow = eventually(lambda: find("push button", "Allow"))
        self.assertIsNotNone(allow, "the sheet appeared on the pending request")
        self.assertIsNotNone(find("label", prefix="Study purpose: "), "purpose shown and labelled")
        light = find("check box", prefix="Ambient light sensor")
        motion = find("check box", prefix="Accelerometer (Required)")
        self.assertIsNotNone(light, "a switch per sensor, named by the sensor")
        self.assertIsNotNone(motion, "the Required sensor is marked")
        self.assertIsNotNone(eventually(lambda: find("label", prefix="Warning: This study requires")),
                             "declining a Required sensor is warned about")
        self.assert_fits(PHONE)
        self.screenshot(PHONE)
        press(light)
        self.assertTrue(eventually(lambda: checked(light)))
        press(allow)
        self.assertEqual(client.wait_reply(request_id).get("ok"), True, "the app's request was answered")
        self.assertEqual(statuses(STUDY), {ACCELEROMETER: (2, False), AMBIENT_LIGHT: (1, False)})
        self.assertTrue(eventually(lambda: find("push button", "Allow") is None), "the sheet closed")

    def test_2_sheet_on_a_tablet_dont_allow_declines(self):
        client, request_id = self.request(OTHER, [ACCELEROMETER])
        self.launch("--watch", "--size", TABLET)
        motion = eventually(lambda: find("check box", prefix="Accelerometer (Required)"))
        self.assertIsNotNone(motion)
        press(motion)
        self.assertTrue(eventually(lambda: checked(motion)), "switched on")
        self.assertIsNone(find("label", prefix="Warning:"), "no warning while the Required sensor is on")
        self.assert_fits(TABLET)
        self.screenshot(TABLET)
        press(find("push button", "Don't Allow"))
        self.assertEqual(client.wait_reply(request_id).get("ok"), True)
        self.assertEqual(statuses(OTHER), {ACCELEROMETER: (2, False)}, "Don't Allow declines whatever the switches say")

    def test_2b_watch_waits_on_the_daemons_event_without_polling(self):
        """Started before any request: the sheet appears on the consentPending event; while
        nothing happens the application sends nothing (the watcher this replaced asked every 2 s);
        after a daemon restart (every connection dropped) it watches again by itself."""
        relay = CountingRelay(os.environ["SENSORKIT_SOCKET"],
                              os.path.join(os.path.dirname(os.environ["SENSORKIT_SOCKET"]), "relay.sock"))
        self.addCleanup(relay.close)
        self.launch("--watch", "--size", PHONE, socket_path=relay.path)
        self.assertTrue(eventually(lambda: "watchConsent" in relay.ops()), "the watch is in place: %s" % relay.ops())
        # Nothing waits: an idle span longer than the old poll interval, in which no request may come.
        # (Absence can only be watched for a while; 3 s covers one and a half of the old polls.)
        idle_from = time.monotonic()
        time.sleep(3)
        self.assertEqual(relay.ops(idle_from), [], "no request while nothing happens")
        self.assertEqual(relay.ops(), ["hello", "watchConsent"], "one connection, one watch")

        client, request_id = self.request(LATER, [ACCELEROMETER])
        motion = eventually(lambda: find("check box", prefix="Accelerometer (Required)"))
        self.assertIsNotNone(motion, "the sheet appeared on the event")
        self.assertEqual(relay.ops(idle_from), ["hello", "consentList"],
                         "the event made one short call for the sheet, nothing else")
        press(find("push button", "Don't Allow"))
        self.assertEqual(client.wait_reply(request_id).get("ok"), True)
        self.assertTrue(eventually(lambda: find("push button", "Don't Allow") is None), "the sheet closed")

        connections = relay.connections
        relay.drop()
        self.assertTrue(eventually(lambda: relay.connections > connections and relay.ops().count("watchConsent") == 2),
                        "watching again after the restart: %s" % relay.ops())
        idle_from = time.monotonic()
        time.sleep(3)
        self.assertEqual(relay.ops(idle_from), [], "and idle again")

    def open_study(self, size):
        self.launch("--size", size)
        self.assertIsNotNone(eventually(lambda: find("list item", prefix=STUDY)), "the panel lists the study")
        press(find("push button", prefix="Open " + STUDY))
        return eventually(lambda: find("push button", "Delete Data…"))

    def test_3_panel_turns_a_sensor_on_and_off_and_deletes_a_day(self):
        self.assertIsNotNone(self.open_study(PHONE), "the study's page opened")
        motion = find("check box", prefix="Accelerometer (Required)")
        self.assertFalse(checked(motion), "declined on the sheet: off")
        press(motion)
        self.assertTrue(eventually(lambda: statuses(STUDY)[ACCELEROMETER] == (1, False)), "turned on: authorized")
        press(motion)
        self.assertTrue(eventually(lambda: statuses(STUDY)[ACCELEROMETER] == (2, False)), "turned off: revoked")
        recorded = eventually(lambda: find(None, prefix="Accelerometer on this day: recorded"))
        self.assertIsNotNone(recorded, "the day's data is drawn and said")
        self.assert_fits(PHONE)
        self.screenshot(PHONE)
        with admin() as client:
            now = client.now_ns()
        press(find("push button", "Delete Data…"))
        this_day = eventually(lambda: find("push button", "This Day"))
        self.assertIsNotNone(this_day, "the deletion asks which range")
        press(this_day)

        def deleted():
            with admin() as client:
                streams = client.health(now - 3600 * 10**9, now + 10**9).get("streams", [])
            return [r for s in streams if s["sensor"] == ACCELEROMETER for r in s.get("records", []) if r["reason"] == 0]
        self.assertTrue(eventually(deleted), "a userInitiated record for the deleted day")

        def said():
            bar = find(None, prefix="Accelerometer on this day:")
            return bar is not None and "deleted by you" in spoken(bar.get_name())
        self.assertTrue(eventually(said), "the day shows the deletion")

    def test_4_panel_on_a_tablet_and_in_each_orientation(self):
        """The study's page at a tablet's size in landscape and portrait and a phone's in landscape:
        it fits, and its day bar says what test 3 left (recording went on after the deletion)."""
        for size in (TABLET, TABLET_PORTRAIT, PHONE_LANDSCAPE):
            process = None if size == TABLET else self.launched
            if process is not None:
                self.stop(process)
            self.assertIsNotNone(self.open_study(size), size)
            bar = eventually(lambda: find(None, prefix="Accelerometer on this day: recorded"))
            self.assertIsNotNone(bar, "%s: the day bar is named by what it shows" % size)
            self.assertIn("deleted by you", spoken(bar.get_name()), size)
            self.assert_fits(size)
            self.screenshot(size)

    def test_5_sheet_in_each_orientation_and_by_keyboard_alone(self):
        """A pending request for two sensors: the sheet fits a phone in landscape and a tablet in
        portrait; on the tablet it is answered with Tab, Space and Return only (no pointer, no
        accessible action): ambient light switched on, Allow. The daemon then has ambient light
        authorized and the accelerometer (left off) denied."""
        client, request_id = self.request(KEYBOARD, [ACCELEROMETER, AMBIENT_LIGHT])
        for size in (PHONE_LANDSCAPE, TABLET_PORTRAIT):
            process = self.launch("--watch", "--size", size)
            self.assertIsNotNone(eventually(lambda: find("push button", "Allow")), "%s: the sheet" % size)
            self.assert_fits(size)
            self.screenshot(size)
            if size == PHONE_LANDSCAPE:
                self.stop(process)  # closing leaves the request pending: the next watcher shows it again
        self.assertEqual(statuses(KEYBOARD), {ACCELEROMETER: (0, True), AMBIENT_LIGHT: (0, True)})
        # Xvfb runs no window manager: the keyboard goes where the pointer is (PointerRoot).
        extents = eventually(lambda: screen_extents(window()) if window() else None)
        Atspi.generate_mouse_event(extents.x + extents.width // 2, extents.y + 40, "abs")
        light = tab_to("check box", "Ambient light sensor")
        self.assertIsNotNone(light, "Tab reaches the ambient light switch")
        self.assertFalse(checked(light))
        key(KEY_SPACE)
        self.assertTrue(eventually(lambda: checked(light), 5), "Space switched it on")
        self.assertIsNotNone(tab_to("push button", "Allow"), "Tab reaches Allow")
        key(KEY_RETURN)
        self.assertEqual(client.wait_reply(request_id).get("ok"), True, "Return answered the app's request")
        self.assertEqual(statuses(KEYBOARD), {ACCELEROMETER: (2, False), AMBIENT_LIGHT: (1, False)})
        self.assertTrue(eventually(lambda: find("push button", "Allow") is None), "the sheet closed")


if __name__ == "__main__":
    unittest.main()

"""Research Sensor & Usage Data: every study the participant answers for, its sensors with a switch
(off = consent revoked: recording stops when no study wants the sensor), the data collected per
sensor on a day (recorded time and each kind of gap, drawn and said in words), and deleting
recorded data over a range (`deleteData`, which every study then fetches as userInitiated
deletion records)."""
import datetime

import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Adw", "1")
from gi.repository import Adw, Gtk  # noqa: E402

from . import choices  # noqa: E402

COLOURS = {"recorded": (0.20, 0.52, 0.89), choices.USER_INITIATED: (0.60, 0.60, 0.60),
           choices.NO_INTERESTED_CLIENTS: (0.69, 0.75, 0.77)}
GAP = (0.90, 0.38, 0.0)


def day_bar(stream, day_from, day_to):
    """A drawing of one stream's day: recorded spans blue, deleted-by-you grey, time no study
    recorded grey-blue, other gaps orange."""
    area = Gtk.DrawingArea(content_height=14, hexpand=True, valign=Gtk.Align.CENTER)

    def draw(_area, cr, width, height):
        cr.set_source_rgb(0.92, 0.92, 0.92)
        cr.rectangle(0, 0, width, height)
        cr.fill()
        span = max(1, day_to - day_from)

        def paint(a, b, colour):
            a, b = choices.clip((a, b), day_from, day_to)
            if b <= a:
                return
            x = (a - day_from) / span * width
            cr.set_source_rgb(*colour)
            cr.rectangle(x, 0, max(2.0, (b - a) / span * width), height)  # a short recording stays visible
            cr.fill()
        for record in stream.get("records", []):
            paint(record["start"], record["end"], COLOURS.get(record["reason"], GAP))
        for a, b in stream.get("spans", []):
            paint(a, b, COLOURS["recorded"])
    area.set_draw_func(draw)
    return area


class ResearchDataWindow(Adw.ApplicationWindow):
    def __init__(self, application, daemon, width=360, height=720):
        super().__init__(application=application, default_width=width, default_height=height,
                         title="Research Sensor & Usage Data")
        self.daemon = daemon
        self.day = datetime.date.today()
        self.app = None
        self.toasts = Adw.ToastOverlay()
        self.stack = Gtk.Stack(transition_type=Gtk.StackTransitionType.SLIDE_LEFT_RIGHT)
        self.toasts.set_child(self.stack)
        self.set_content(self.toasts)
        self.show_studies()

    # -- pages --

    def _page(self, title, content, back=False):
        box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
        header = Adw.HeaderBar(title_widget=Adw.WindowTitle(title=title))
        if back:
            button = Gtk.Button(icon_name="go-previous-symbolic", tooltip_text="Back")
            button.update_property([Gtk.AccessibleProperty.LABEL], ["Back"])
            button.connect("clicked", lambda _b: self.show_studies())
            header.pack_start(button)
        box.append(header)
        scroller = Gtk.ScrolledWindow(vexpand=True, hscrollbar_policy=Gtk.PolicyType.NEVER)
        clamp = Adw.Clamp(maximum_size=800, tightening_threshold=500,
                          child=Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=18, margin_top=18,
                                        margin_bottom=18, margin_start=12, margin_end=12))
        for widget in content:
            clamp.get_child().append(widget)
        scroller.set_child(clamp)
        box.append(scroller)
        old = self.stack.get_visible_child()
        self.stack.add_child(box)
        self.stack.set_visible_child(box)
        if old is not None:
            self.stack.remove(old)

    def _failed(self, error):
        self.toasts.add_toast(Adw.Toast(title=str(getattr(error, "message", error)), timeout=5))

    def show_studies(self):
        self.app = None
        try:
            sheets = self.daemon.consent()
        except Exception as error:  # the daemon's refusal or absence, said in the window
            sheets = []
            self._failed(error)
        group = Adw.PreferencesGroup(title="Studies",
                                     description="Studies that may collect research data on this device.")
        if not sheets:
            group.add(Adw.ActionRow(title="No studies you answer for are installed."))
        for sheet in sheets:
            on = sum(1 for item in sheet["items"] if item["status"] == choices.AUTHORIZED)
            row = Adw.ActionRow(title=sheet["app"], subtitle="%d of %d sensors on" % (on, len(sheet["items"])),
                                activatable=True)
            # A real button, so the row is reached and pressed the same way by keyboard, pointer
            # and assistive technology.
            button = Gtk.Button(icon_name="go-next-symbolic", valign=Gtk.Align.CENTER, css_classes=["flat"])
            button.update_property([Gtk.AccessibleProperty.LABEL], ["Open " + sheet["app"]])
            button.connect("clicked", lambda _b, app=sheet["app"]: self.show_study(app))
            row.add_suffix(button)
            row.set_activatable_widget(button)
            group.add(row)
        self._page("Research Sensor & Usage Data", [group])

    def show_study(self, app):
        self.app = app
        try:
            sheet = next(iter(self.daemon.consent(app)), None)
            now, offset = self.daemon.now_and_offset()
            day_from, day_to = choices.day_range(self.day, offset)
            health = self.daemon.health(day_from, day_to)
        except Exception as error:
            self._failed(error)
            return self.show_studies()
        if sheet is None:
            return self.show_studies()
        self.now, self.day_from, self.day_to = now, day_from, day_to
        purpose = Gtk.Label(label=sheet.get("purpose") or "", wrap=True, xalign=0)
        sensors = Adw.PreferencesGroup(title="Sensors",
                                       description="Turning a sensor off stops the study collecting it.")
        for item in sheet["items"]:
            title = choices.display_name(item["name"]) + (" (Required)" if item.get("required") else "")
            row = Adw.ActionRow(title=title, subtitle=item.get("description") or "", subtitle_lines=0)
            switch = Gtk.Switch(active=item["status"] == choices.AUTHORIZED, valign=Gtk.Align.CENTER)
            switch.update_property([Gtk.AccessibleProperty.LABEL], [title])
            switch.connect("state-set", lambda _s, state, sensor=item["sensor"]: self._set(app, sensor, state))
            row.add_suffix(switch)
            row.set_activatable_widget(switch)
            sensors.add(row)

        entitled = {item["sensor"]: choices.display_name(item["name"]) for item in sheet["items"]}
        data = Adw.PreferencesGroup(title="Data Collected")
        days = Gtk.Box(spacing=6)
        previous = Gtk.Button(icon_name="go-previous-symbolic", tooltip_text="Previous Day")
        previous.update_property([Gtk.AccessibleProperty.LABEL], ["Previous Day"])
        previous.connect("clicked", lambda _b: self._move_day(-1))
        following = Gtk.Button(icon_name="go-next-symbolic", tooltip_text="Next Day",
                               sensitive=self.day < datetime.date.today())
        following.update_property([Gtk.AccessibleProperty.LABEL], ["Next Day"])
        following.connect("clicked", lambda _b: self._move_day(1))
        days.append(previous)
        days.append(Gtk.Label(label=self.day.strftime("%A %d %B %Y"), hexpand=True))
        days.append(following)
        streams = [s for s in health.get("streams", []) if s["sensor"] in entitled]
        if not streams:
            data.add(Adw.ActionRow(title="Nothing recorded on this day"))
        for stream in streams:
            stream = dict(stream, records=choices.day_records(stream, health.get("now", now)))
            summary = choices.day_summary(stream, day_from, day_to)
            name = entitled[stream["sensor"]] + ("" if stream["device"] == "host" else " (%s)" % stream["device"])
            row = Adw.ActionRow(title=name, subtitle=summary)
            bar = day_bar(stream, day_from, day_to)
            bar.set_size_request(120, -1)
            bar.update_property([Gtk.AccessibleProperty.LABEL], ["%s on this day: %s" % (name, summary)])
            row.add_suffix(bar)
            data.add(row)
        delete = Gtk.Button(label="D_elete Data…", use_underline=True, css_classes=["destructive-action", "pill"],
                            halign=Gtk.Align.CENTER)
        delete.connect("clicked", lambda _b: self._ask_delete(app))
        # The day's navigation under the group's title, not beside it: on a phone the two do not fit one line.
        self._page(app, [purpose, sensors, days, data, delete], back=True)

    # -- actions --

    def _move_day(self, step):
        self.day = min(datetime.date.today(), self.day + datetime.timedelta(days=step))
        self.show_study(self.app)

    def _set(self, app, sensor, state):
        try:
            notice = self.daemon.decide(app, {sensor: bool(state)})
            if notice:
                self.toasts.add_toast(Adw.Toast(title=notice, timeout=5))
        except Exception as error:
            self._failed(error)
            return True  # the switch keeps its old state
        return False

    def _ask_delete(self, app):
        dialog = Adw.MessageDialog(transient_for=self, modal=True, heading="Delete Data",
                                   body="Recorded data of %s is deleted for every study using these sensors. "
                                        "Studies see that you deleted it." % app)
        dialog.add_response("cancel", "_Cancel")
        ranges = choices.deletion_choices(self.now, self.day_from, self.day_to)
        for index, (label, _from, _to) in enumerate(ranges):
            dialog.add_response(str(index), "_" + label)
            dialog.set_response_appearance(str(index), Adw.ResponseAppearance.DESTRUCTIVE)
        dialog.set_default_response("cancel")
        dialog.set_close_response("cancel")

        def answered(_dialog, response):
            if response == "cancel":
                return
            label, from_ns, to_ns = ranges[int(response)]
            try:
                reply = self.daemon.delete(app, from_ns, to_ns)
                self.toasts.add_toast(Adw.Toast(title="Deleted %d samples (%s)" % (reply.get("count", 0), label),
                                                timeout=5))
            except Exception as error:
                self._failed(error)
            self.show_study(app)
        dialog.connect("response", answered)
        dialog.present()

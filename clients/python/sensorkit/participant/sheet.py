"""The authorization sheet: what iOS shows for `requestAuthorization`, for one study's pending
sensors. Answers through consentDecide exactly as `sensorkitctl consent` does: Allow decides each
pending sensor as its switch says, Don't Allow declines them all; a Required sensor switched off
shows a warning before anything is sent."""
import gi

gi.require_version("Gtk", "4.0")
gi.require_version("Adw", "1")
from gi.repository import Adw, Gtk  # noqa: E402

from . import choices  # noqa: E402


class AuthorizationSheet(Adw.Window):
    def __init__(self, application, sheet, on_answer, width=360, height=720):
        super().__init__(application=application, default_width=width, default_height=height,
                         title="Research Sensor & Usage Data Request")
        self.sheet = sheet
        self.items = choices.pending_items(sheet)
        self.on_answer = on_answer
        self.switches = {}

        page = Gtk.Box(orientation=Gtk.Orientation.VERTICAL)
        page.append(Adw.HeaderBar(title_widget=Adw.WindowTitle(title="Research Data", subtitle=sheet["app"])))
        scroller = Gtk.ScrolledWindow(vexpand=True, hscrollbar_policy=Gtk.PolicyType.NEVER)
        clamp = Adw.Clamp(maximum_size=640, tightening_threshold=400)
        body = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=18, margin_top=18, margin_bottom=18,
                       margin_start=12, margin_end=12)
        heading = Gtk.Label(label="“%s” would like to collect research sensor and usage data" % sheet["app"],
                            wrap=True, justify=Gtk.Justification.CENTER, css_classes=["title-2"])
        body.append(heading)
        purpose = Gtk.Label(label=sheet.get("purpose") or "The study gives no purpose.", wrap=True,
                            xalign=0)
        purpose.update_property([Gtk.AccessibleProperty.LABEL], ["Study purpose: " + purpose.get_label()])
        body.append(purpose)
        if sheet.get("privacyPolicyURL"):
            body.append(Gtk.LinkButton(uri=sheet["privacyPolicyURL"], label="Privacy Policy",
                                       halign=Gtk.Align.START))

        group = Adw.PreferencesGroup(title="Sensors", description="Choose what the study may collect.")
        for item in self.items:
            title = choices.display_name(item["name"]) + (" (Required)" if item.get("required") else "")
            row = Adw.ActionRow(title=title, subtitle=item.get("description") or "", subtitle_lines=0)
            switch = Gtk.Switch(valign=Gtk.Align.CENTER)
            switch.update_property([Gtk.AccessibleProperty.LABEL], [title])
            switch.connect("notify::active", self._changed)
            row.add_suffix(switch)
            row.set_activatable_widget(switch)
            group.add(row)
            self.switches[item["sensor"]] = switch
        body.append(group)

        self.warning = Gtk.Label(wrap=True, xalign=0, css_classes=["warning"], visible=False)
        body.append(self.warning)
        clamp.set_child(body)
        scroller.set_child(clamp)
        page.append(scroller)

        buttons = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6, margin_top=6, margin_bottom=12,
                          margin_start=12, margin_end=12)
        allow = Gtk.Button(label="_Allow", use_underline=True, css_classes=["suggested-action", "pill"])
        allow.connect("clicked", lambda _b: self._answer(True))
        deny = Gtk.Button(label="_Don't Allow", use_underline=True, css_classes=["pill"])
        deny.connect("clicked", lambda _b: self._answer(False))
        buttons.append(allow)
        buttons.append(deny)
        page.append(Adw.Clamp(maximum_size=400, child=buttons))
        self.set_content(page)
        self._changed()

    def switched_on(self):
        return {sensor: switch.get_active() for sensor, switch in self.switches.items()}

    def _changed(self, *_args):
        text = choices.required_warning(choices.declined_required(self.items, self.switched_on()))
        self.warning.set_label(text)
        self.warning.set_visible(bool(text))
        if text:
            self.warning.update_property([Gtk.AccessibleProperty.LABEL], ["Warning: " + text])

    def _answer(self, allow):
        self.on_answer(self, self.sheet["app"], choices.decisions(self.items, self.switched_on(), allow))

"""What the participant's windows decide, without GTK: the sheet's answer, the warning about Required
sensors, the day's range on the daemon's timeline, what a day's record says. Pure functions over
the daemon's replies (docs/protocol.md §3.5, §3.8)."""
import datetime
import re

NOT_DETERMINED, AUTHORIZED, DENIED = 0, 1, 2
USER_INITIATED, NO_INTERESTED_CLIENTS = 0, 3
# SRDeletionReason raw values in words. systemInitiated (4) covers a device gone, a daemon crash and
# a buffer overflow alike: the record does not say which, so neither may the panel.
REASONS = {0: "deleted by you", 1: "low disk space", 2: "older than the window", 3: "no study recording",
           4: "lost (device gone, crash or overflow)"}
DAY_NS = 86_400 * 10**9


def display_name(name):
    """A catalog name for people: "ambientLightSensor" → "Ambient light sensor"."""
    words = re.sub(r"(?<=[a-z])(?=[A-Z])", " ", name).split(" ")
    return " ".join([words[0][:1].upper() + words[0][1:]] + [w.lower() if w[1:].islower() else w for w in words[1:]])


def pending_items(sheet):
    """The items of a consentList entry the app asked for and nobody decided yet."""
    return [item for item in sheet.get("items", []) if item.get("pending")]


def decisions(items, switched_on, allow):
    """The consentDecide decisions of the sheet: with Allow, each pending sensor as its switch says;
    with Don't Allow, every pending sensor denied (as the terminal sheet's answers)."""
    return {item["sensor"]: bool(allow and switched_on.get(item["sensor"], False)) for item in items}


def declined_required(items, switched_on):
    """Names of the Required sensors whose switch is off: the sheet warns about them."""
    return [display_name(item["name"]) for item in items if item.get("required") and not switched_on.get(item["sensor"], False)]


def required_warning(names):
    if not names:
        return ""
    return ("This study requires %s. If you don't allow %s, you cannot take part in the study."
            % (", ".join(names), "it" if len(names) == 1 else "them"))


def sr_offset_ns(daemon_now_sr_ns, unix_now_ns):
    """Unix ns minus SR ns now (the daemon's daemonStatus `now` against this machine's clock)."""
    return unix_now_ns - daemon_now_sr_ns


def day_range(day, offset_ns):
    """(from, to] in SR ns of a local calendar day (a datetime.date)."""
    start = datetime.datetime.combine(day, datetime.time()).astimezone()
    end = datetime.datetime.combine(day + datetime.timedelta(days=1), datetime.time()).astimezone()
    return int(start.timestamp() * 10**9) - offset_ns, int(end.timestamp() * 10**9) - offset_ns


def duration_text(ns):
    seconds = max(0, int(ns // 10**9))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return "%d h %d min" % (hours, minutes)
    if minutes:
        return "%d min %d s" % (minutes, seconds)
    return "%d s" % seconds


def clip(span, low, high):
    return max(span[0], low), min(span[1], high)


def day_summary(stream, day_from, day_to):
    """One sentence for a stream's day (a `health` stream over the day): recorded time and each
    kind of deletion, for people and screen readers alike."""
    recorded = sum(max(0, b - a) for a, b in (clip(s, day_from, day_to) for s in stream.get("spans", [])))
    parts = ["recorded %s" % duration_text(recorded)]
    by_reason = {}
    for record in stream.get("records", []):
        a, b = clip((record["start"], record["end"]), day_from, day_to)
        by_reason[record["reason"]] = by_reason.get(record["reason"], 0) + max(0, b - a)
    for reason, ns in sorted(by_reason.items()):
        parts.append("%s %s" % (duration_text(ns), REASONS.get(reason, "lost")))
    return ", ".join(parts)


def day_records(stream, now_sr_ns):
    """A `health` stream's deletion records, and while no study wants the sensor (the participant
    turned it off, or every study stopped) the time since then as "no study recording": the daemon
    writes that record only when recording resumes, and says `unwantedSince` meanwhile."""
    records = list(stream.get("records", []))
    since = stream.get("unwantedSince")
    if isinstance(since, int) and not isinstance(since, bool) and since < now_sr_ns:
        records.append({"start": since, "end": now_sr_ns, "reason": NO_INTERESTED_CLIENTS})
    return records


def deletion_choices(now_sr_ns, day_from, day_to):
    """The ranges the panel offers to delete, as (label, from, to): the last hour, the shown day,
    and the whole 7-day window — each at most 8 days, as the daemon requires."""
    return [
        ("Last Hour", now_sr_ns - 3600 * 10**9, now_sr_ns),
        ("This Day", day_from, min(day_to, now_sr_ns)),
        ("Last 7 Days", now_sr_ns - 7 * DAY_NS, now_sr_ns),
    ]

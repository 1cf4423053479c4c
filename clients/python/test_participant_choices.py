"""The participant application's decisions without GTK (sensorkit/participant/choices.py): the sheet
answers as the terminal sheet does, the Required warning, a day's range and summary."""
import datetime
import unittest

from sensorkit.participant import choices

ITEMS = [
    {"sensor": "a", "name": "accelerometer", "required": True, "status": 0, "pending": True},
    {"sensor": "l", "name": "ambientLightSensor", "required": False, "status": 0, "pending": True},
    {"sensor": "h", "name": "heartRate", "required": False, "status": 1, "pending": False},
]


class ChoicesTests(unittest.TestCase):
    def test_only_pending_sensors_are_asked(self):
        self.assertEqual([i["sensor"] for i in choices.pending_items({"items": ITEMS})], ["a", "l"])

    def test_allow_follows_the_switches_and_dont_allow_declines_all(self):
        items = choices.pending_items({"items": ITEMS})
        self.assertEqual(choices.decisions(items, {"l": True}, allow=True), {"a": False, "l": True})
        self.assertEqual(choices.decisions(items, {"a": True, "l": True}, allow=False), {"a": False, "l": False})

    def test_a_required_sensor_switched_off_is_warned_about(self):
        items = choices.pending_items({"items": ITEMS})
        self.assertEqual(choices.declined_required(items, {"l": True}), ["Accelerometer"])
        self.assertEqual(choices.declined_required(items, {"a": True}), [])
        self.assertIn("requires Accelerometer", choices.required_warning(["Accelerometer"]))
        self.assertEqual(choices.required_warning([]), "")

    def test_names_for_people(self):
        self.assertEqual(choices.display_name("ambientLightSensor"), "Ambient light sensor")
        self.assertEqual(choices.display_name("accelerometer"), "Accelerometer")

    def test_a_day_is_24_hours_of_sr_time_on_a_plain_day(self):
        offset = 978_307_200 * 10**9
        start, end = choices.day_range(datetime.date(2026, 12, 5), offset)
        self.assertEqual(end - start, choices.DAY_NS)

    def test_day_summary_clips_to_the_day_and_names_each_reason(self):
        s = 10**9
        stream = {"spans": [[-100 * s, 60 * s], [120 * s, 180 * s]],
                  "records": [{"start": 60 * s, "end": 120 * s, "reason": 0},
                              {"start": 180 * s, "end": 300 * s, "reason": 4}]}
        self.assertEqual(choices.day_summary(stream, 0, 3600 * s),
                         "recorded 2 min 0 s, 1 min 0 s deleted by you, 2 min 0 s lost (device gone, crash or overflow)")
        self.assertNotIn("unavailable", choices.REASONS[4], "a crash or an overflow is not an unavailable sensor")

    def test_time_since_no_study_wants_the_sensor_is_said_as_such(self):
        s = 10**9
        stream = {"spans": [[0, 60 * s]], "records": [], "unwantedSince": 60 * s}
        self.assertEqual(choices.day_summary(dict(stream, records=choices.day_records(stream, 180 * s)), 0, 3600 * s),
                         "recorded 1 min 0 s, 2 min 0 s no study recording")
        self.assertEqual(choices.day_records({"records": [], "unwantedSince": 200 * s}, 180 * s), [], "not yet")
        self.assertEqual(choices.day_records({"records": []}, 180 * s), [], "wanted: nothing to add")

    def test_deletion_ranges_end_now_at_the_latest(self):
        now = 10 * choices.DAY_NS
        ranges = choices.deletion_choices(now, now - 3600 * 10**9, now + 7200 * 10**9)
        self.assertEqual([label for label, _, _ in ranges], ["Last Hour", "This Day", "Last 7 Days"])
        self.assertTrue(all(to <= now and to - start <= 8 * choices.DAY_NS for _, start, to in ranges))


if __name__ == "__main__":
    unittest.main()

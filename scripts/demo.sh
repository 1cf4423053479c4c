#!/usr/bin/env bash
# The daemon's main job on the demo rig, a virtual tablet, a chest strap and an optical sensor:
#   - umockdev devices (Tests/Fixtures/iio/bmi160.umockdev, demo-tablet.umockdev): a BMI160
#     accelerometer + gyroscope fed a 100 Hz buffered stream with kernel timestamps, and polled
#     ambient light, barometer with temperature, and step counter whose sysfs values change with
#     the same story (scripts/demo_rig.py: a tablet on a table, picked up, carried upstairs);
#   - an emulated Polar H10-like chest strap (heart rate with RR intervals, ECG, contact) and an
#     emulated Polar Verity Sense-like optical sensor (PPG), both served by sensorkit-wearable on
#     the emulated BLE transport (docs/ble.md §4, §6).
# The real sensorkitd records them with the lab profile (hold 0, data fetchable at once), a study
# app granted every sensor starts recording, and at the end the demo shows per sensor what was
# recorded: counts, rates, the gaps with their reasons, the first values in SensorKit's units
# written for people (scripts/demo_summary.py), the health table again, and where the data lives.
#
# Usage: demo.sh [BIN_DIR]    (BIN_DIR: the build folder holding sensorkitd, sensorkitctl and
#                              sensorkit-wearable; default .build/release)
# DEMO_SECONDS=N records for N seconds (default 40, at most 3600); Ctrl-C while recording ends the
# recording early and still shows the summary. DEMO_KEEP=1 keeps the rig's folder (state, logs).
# DEMO_STRAP_DROPS=N: the wearables drop their links every N s (default 25), a gap the summary explains.
set -euo pipefail
bin=$(cd "${1:-.build/release}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
python=${SENSORKIT_PYTHON:-/usr/bin/python3}   # Debian's interpreter, as in the tests
seconds=${DEMO_SECONDS:-40}
case "$seconds" in '' | *[!0-9]*) echo "DEMO_SECONDS must be a whole number of seconds" >&2; exit 2 ;; esac
[ "$seconds" -ge 5 ] && [ "$seconds" -le 3600 ] || { echo "DEMO_SECONDS must be 5…3600" >&2; exit 2; }
strap_drops=${DEMO_STRAP_DROPS:-25}
case "$strap_drops" in '' | *[!0-9]* | 0) echo "DEMO_STRAP_DROPS must be a positive number of seconds" >&2; exit 2 ;; esac
for tool in sensorkitd sensorkitctl sensorkit-wearable; do
  [ -x "$bin/$tool" ] || { echo "no $bin/$tool (build the package's products first)" >&2; exit 2; }
done

rig=$(mktemp -d /tmp/sensorkit-demo-XXXXXX)
chmod 755 "$rig"
app=org.example.demo
strap=C0:FF:EE:00:00:01
optical=C0:FF:EE:00:00:20
daemon_pid=""
wearable_pid=""

# Each child runs in its own session (setsid), so Ctrl-C in the terminal reaches only this script,
# and its whole process group (timeout, umockdev-run, the daemon, the sysfs feeder; the wearable
# emulator) is ended here: SIGTERM to both groups, at most 5 s to stop, then SIGKILL.
cleanup() {
  trap - INT TERM
  local pid groups=() waited
  for pid in "$wearable_pid" "$daemon_pid"; do
    if [ -n "$pid" ] && kill -TERM -- "-$pid" 2>/dev/null; then groups+=("$pid"); fi
  done
  alive() { local group; for group in "${groups[@]}"; do kill -0 -- "-$group" 2>/dev/null && return 0; done; return 1; }
  for waited in $(seq 50); do alive || break; sleep 0.1; done
  for pid in "${groups[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
  if [ "${DEMO_KEEP:-0}" = 1 ]; then echo "rig folder kept: $rig"; else rm -rf "$rig"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sensors=(accelerometer rotationRate ambientLightSensor ambientPressure pedometerData heartRate onWristState electrocardiogram
  photoplethysmogram)
# The wearable each of their streams comes from.
declare -A wearable=([heartRate]=$strap [onWristState]=$strap [electrocardiogram]=$strap [photoplethysmogram]=$optical)
# Raw sensor names (SRSensor), for each sensor's deletion-record stream `<raw>.tombstones`.
declare -A raw=(
  [accelerometer]=com.apple.SensorKit.motion.accelerometer [rotationRate]=com.apple.SensorKit.motion.gyroscope
  [ambientLightSensor]=com.apple.SensorKit.als [ambientPressure]=com.apple.SensorKit.ambientPressure
  [pedometerData]=com.apple.SensorKit.pedometer.data [heartRate]=com.apple.SensorKit.heart.rate
  [onWristState]=com.apple.SensorKit.onWristState [electrocardiogram]=com.apple.SensorKit.ECG
  [photoplethysmogram]=com.apple.SensorKit.PPG
)

# A study app, as an administrator installs it: Apple's Info.plist and entitlements, plus the Linux binding.
mkdir -p "$rig/apps.d/$app" "$rig/ble" "$rig/fetched"
usage() { echo "    <key>$1</key><dict><key>Description</key><string>$2</string><key>Required</key><true/></dict>"; }
cat > "$rig/apps.d/$app/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>NSSensorKitUsageDescription</key><string>Demo: how a tablet and its user move through the day</string>
  <key>NSSensorKitPrivacyPolicyURL</key><string>https://example.org/privacy</string>
  <key>NSSensorKitUsageDetail</key><dict>
$(usage SRSensorUsageMotion "Movement of the device")
$(usage SRSensorUsageAmbientLightSensor "Light around the device")
$(usage SRSensorUsageElevation "Air pressure and temperature (floors climbed)")
$(usage SRSensorUsagePedometer "Steps walked")
$(usage SRSensorUsageHeartRate "Heart rate from the chest strap")
$(usage SRSensorUsageWristDetection "Whether the strap touches the skin")
$(usage SRSensorUsageECG "ECG from the chest strap")
$(usage SRSensorUsagePPG "Pulse wave from the optical sensor on the arm")
  </dict>
</dict></plist>
PLIST
cat > "$rig/apps.d/$app/Demo.entitlements" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>com.apple.developer.sensorkit.reader.allow</key><array>
    <string>motion-accelerometer</string><string>motion-rotation-rate</string><string>ambient-light-sensor</string>
    <string>ambient-pressure</string><string>pedometer</string><string>heart-rate</string><string>on-wrist</string><string>ecg</string><string>ppg</string>
  </array>
</dict></plist>
PLIST
cat > "$rig/apps.d/$app/Binding.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>Users</key><array><string>$(id -un)</string></array></dict></plist>
PLIST
cat > "$rig/sensorkitd.conf" <<CONF
profile = lab
[grant $app]
sensors = $(IFS=,; echo "${sensors[*]}")
[ble]
transport = emulated:$rig/ble
[wearable chest-strap]
address = $strap
streams = heartRate, onWristState, electrocardiogram
[wearable arm-optical]
address = $optical
streams = photoplethysmogram
CONF

socket="$rig/sensorkitd.sock"
ctl() { "$bin/sensorkitctl" --socket "$socket" "$@"; }
client() { "$python" "$top/clients/python/sensorkit_client.py" --socket "$socket" --app "$app" "$@"; }
# t = 0 of the rig's story, shared by the buffered stream and the polled sensors' feeder.
start=$("$python" -c 'import time; print(time.clock_gettime_ns(time.CLOCK_BOOTTIME))')
"$python" "$top/scripts/demo_rig.py" "$seconds" --start "$start" > "$rig/bmi160.script"
limit=$((seconds + 60))   # no child outlives the demo by more than this, whatever happens to this script

echo "== the wearables: sensorkit-wearable serves an H10-like chest strap at $strap and a Verity Sense-like"
echo "   optical sensor at $optical (emulated BLE, $rig/ble)"
setsid timeout --kill-after=3 "$limit" "$bin/sensorkit-wearable" --dir "$rig/ble" --profile h10 --address "$strap" \
  --profile verity --address "$optical" \
  --disconnect-every "$strap_drops" \
  </dev/null > "$rig/wearable.log" 2>&1 &
wearable_pid=$!

echo "== starting sensorkitd on the tablet (umockdev: BMI160 at /dev/iio:device0, light, barometer, step counter)"
setsid timeout --kill-after=3 "$limit" umockdev-run \
  -d "$top/Tests/Fixtures/iio/bmi160.umockdev" -d "$top/Tests/Fixtures/iio/demo-tablet.umockdev" \
  -s "/dev/iio:device0=$rig/bmi160.script" -- \
  bash -c '"$1" "$2" feed "$UMOCKDEV_DIR" "$3" --start "$4" & shift 4; exec "$@"' feeder \
  "$python" "$top/scripts/demo_rig.py" "$((seconds + 5))" "$start" \
  "$bin/sensorkitd" --socket "$socket" --config "$rig/sensorkitd.conf" --apps-dir "$rig/apps.d" \
  --state-dir "$rig/state" </dev/null > "$rig/daemon.log" 2>&1 &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { sed 's/^<[0-9]>//' "$rig/daemon.log"; echo "sensorkitd did not start" >&2; exit 1; }

echo "== the study app starts recording every sensor it was granted"
for sensor in "${sensors[@]}"; do client start "$sensor" > /dev/null; done
ctl status
echo
for _ in $(seq 50); do
  ctl devices > "$rig/devices.txt" 2>&1 || true
  grep -q "ble:$strap" "$rig/devices.txt" && grep -q "ble:$optical" "$rig/devices.txt" && break
  sleep 0.2
done
ctl devices
echo

# Ctrl-C while recording ends the recording; a later one (not the same keypress delivered twice,
# as `timeout` relays it to its group) ends the demo.
interrupted=""
interrupt() {
  if [ -z "$interrupted" ]; then interrupted=$(date +%s); elif [ $(( $(date +%s) - interrupted )) -ge 2 ]; then exit 130; fi
}
trap interrupt INT
deadline=$(( $(date +%s) + seconds ))
echo "== recording for $seconds s (Ctrl-C ends the recording early and shows the summary) …"
while [ -z "$interrupted" ] && [ "$(date +%s)" -lt "$deadline" ]; do sleep 0.5; done
[ -z "$interrupted" ] || echo "== recording ended by Ctrl-C"

echo "== what the app can fetch now (sensorkitctl fetch --app $app, SensorKit units)"
for sensor in "${sensors[@]}"; do
  device=()
  [ -n "${wearable[$sensor]:-}" ] && device=(--device "ble:${wearable[$sensor]}")
  ctl fetch --app "$app" --sensor "$sensor" "${device[@]}" --from now-1h --to now > "$rig/fetched/$sensor.csv" 2>> "$rig/fetch.log"
  ctl fetch --app "$app" --sensor "${raw[$sensor]}.tombstones" "${device[@]}" --from now-1h --to now > "$rig/fetched/$sensor.gaps.csv" 2>> "$rig/fetch.log"
done
"$python" "$top/scripts/demo_summary.py" "$rig/fetched" "${sensors[@]}"
echo
echo "Acceleration and rotation are on the device's axes (docs/design-notes/0002-axes.md); PPG is the"
echo "sensor's raw optical counts, as the device sends them. Times are seconds after the first sample"
echo "of the recording. Scans stamped before the app's own startRecording of a sensor are not the"
echo "app's, as in SensorKit."
echo
echo "== the daemon's view now (sensorkitctl status)"
ctl status
echo
echo "== today's picture (sensorkitctl report --day $(date +%F), docs/report.md)"
ctl report --day "$(date +%F)" --svg "$rig/day.svg"
[ "${DEMO_KEEP:-0}" = 1 ] || echo "(DEMO_KEEP=1 keeps it, with the rig's folder)"
echo
echo "== where the data lives: $rig/state (the store: SQLite catalog + compressed chunks)"
du -ab "$rig/state" | sort -k2 | awk '{ printf "  %10d  %s\n", $1, $2 }'
echo
echo "== daemon log"
sed 's/^<[0-9]>//' "$rig/daemon.log"

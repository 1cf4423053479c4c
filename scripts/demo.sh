#!/usr/bin/env bash
# The daemon's main job on the demo rig: the real sensorkitd records a BMI160 accelerometer +
# gyroscope (a umockdev device fed a realistic 100 Hz stream with kernel timestamps: a tablet
# picked up and carried), a study app starts recording, and sensorkitctl shows the device and
# fetches what was recorded, in SensorKit's units. Lab profile (hold 0) so data is fetchable at once.
# The emulated BLE wearable of the full demo rig comes with the BLE bridge (plan part 5/6).
set -euo pipefail
bin=$(cd "${1:-.build/release}" && pwd)
top=$(cd "$(dirname "$0")/.." && pwd)
rig=$(mktemp -d /tmp/sensorkit-demo-XXXXXX)
chmod 755 "$rig"
app=org.example.demo
daemon_pid=""
cleanup() {
  [ -n "$daemon_pid" ] && kill -TERM -- "-$daemon_pid" 2>/dev/null || true
  sleep 1
  [ -n "$daemon_pid" ] && kill -KILL -- "-$daemon_pid" 2>/dev/null || true
  rm -rf "$rig"
}
trap cleanup EXIT

# A study app, as an administrator installs it: Apple's Info.plist and entitlements, plus the Linux binding.
mkdir -p "$rig/apps.d/$app"
cat > "$rig/apps.d/$app/Info.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>NSSensorKitUsageDescription</key><string>Demo: how a tablet moves through the day</string>
  <key>NSSensorKitPrivacyPolicyURL</key><string>https://example.org/privacy</string>
  <key>NSSensorKitUsageDetail</key><dict>
    <key>SRSensorUsageMotion</key><dict><key>Description</key><string>Movement of the device</string><key>Required</key><true/></dict>
  </dict>
</dict></plist>
PLIST
cat > "$rig/apps.d/$app/Demo.entitlements" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict>
  <key>com.apple.developer.sensorkit.reader.allow</key><array><string>motion-accelerometer</string><string>motion-rotation-rate</string></array>
</dict></plist>
PLIST
cat > "$rig/apps.d/$app/Binding.plist" <<PLIST
<?xml version="1.0" encoding="UTF-8"?>
<plist version="1.0"><dict><key>Users</key><array><string>$(id -un)</string></array></dict></plist>
PLIST
cat > "$rig/sensorkitd.conf" <<CONF
profile = lab
[grant $app]
sensors = accelerometer, rotationRate
CONF

socket="$rig/sensorkitd.sock"
ctl() { "$bin/sensorkitctl" --socket "$socket" "$@"; }
python3 "$top/scripts/demo_rig.py" 8 --lead 0 > "$rig/bmi160.script"

echo "== starting sensorkitd on the demo rig (umockdev BMI160 at /dev/iio:device0)"
setsid timeout --kill-after=3 60 umockdev-run -d "$top/Tests/Fixtures/iio/bmi160.umockdev" \
  -s "/dev/iio:device0=$rig/bmi160.script" -- \
  "$bin/sensorkitd" --socket "$socket" --config "$rig/sensorkitd.conf" --apps-dir "$rig/apps.d" \
  --state-dir "$rig/state" 2> "$rig/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { cat "$rig/daemon.log"; echo "sensorkitd did not start"; exit 1; }

echo "== the study app starts recording (its stake turns the IIO buffer on)"
python3 "$top/clients/python/sensorkit_client.py" --socket "$socket" --app "$app" start accelerometer >/dev/null
python3 "$top/clients/python/sensorkit_client.py" --socket "$socket" --app "$app" start rotationRate >/dev/null
ctl status
echo
ctl devices
echo
echo "== recording the 8 s stream …"
sleep 11
echo "== fetched as the app (accelerometer in g, device axes after the mount matrix; first rows)"
ctl fetch --app "$app" --sensor accelerometer --from now-1h --to now > "$rig/accel.csv"
head -n 6 "$rig/accel.csv" | column -t -s,
echo "…"
ctl fetch --app "$app" --sensor rotationRate --from now-1h --to now > "$rig/gyro.csv"
echo "accelerometer rows: $(($(wc -l < "$rig/accel.csv") - 1)), rotation-rate rows: $(($(wc -l < "$rig/gyro.csv") - 1))"
echo "(800 scans were sent; scans stamped before the app's own startRecording of a sensor are not the app's, as in SensorKit)"
ctl fetch --app "$app" --sensor com.apple.SensorKit.motion.accelerometer.tombstones --from now-1h --to now > "$rig/gaps.csv"
echo "deletion records (gaps with reasons): $(($(wc -l < "$rig/gaps.csv") - 1))"
echo
echo "== daemon log"
sed 's/^<[0-9]>//' "$rig/daemon.log"

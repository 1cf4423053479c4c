#!/usr/bin/env bash
# A hostile wearable is contained (docs/reliability.md, "A hostile or broken wearable"): the real
# sensorkitd (build in $1) recording an H10-like wearable that, for a minute, sends 10,000 pairs a
# second of a good ECG frame and one that does not decode, beside an honest heart-rate strap.
# Prints the deletion records ("lost" lines) and log lines a second and the daemon's RSS; the
# suite's BLEHostileWearableTests is the 3-second version (and times the other strap). ~80 s.
set -euo pipefail
source "$(dirname "$0")/lib/study-app.bash"
bin=$(cd "${1:-.build/release}" && pwd)
seconds="${HOSTILE_SECONDS:-60}"
work=$(mktemp -d /tmp/skd-hostile-XXXXXX)
chmod 755 "$work"
app=org.example.hostile
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  sleep 1
  for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

mkdir -p "$work/ble"
write_study_app "$work/apps.d" "$app" "hostile soak" "heart-rate ecg" "$(id -un)"
cat > "$work/sensorkitd.conf" <<CONF
profile = lab
[grant $app]
sensors = heartRate, electrocardiogram
[iio]
enabled = no
[ble]
transport = emulated:$work/ble
[wearable chest]
address = C0:FF:EE:00:00:10
streams = heartRate, electrocardiogram
[wearable strap]
address = C0:FF:EE:00:00:01
streams = heartRate
CONF
socket="$work/s.sock"
"$bin/sensorkit-wearable" --dir "$work/ble" --profile h10 --flood-undecodable 10000 > "$work/h10.out" 2>&1 &
pids+=($!)
"$bin/sensorkit-wearable" --dir "$work/ble" --profile strap > "$work/strap.out" 2>&1 &
pids+=($!)
"$bin/sensorkitd" --socket "$socket" --config "$work/sensorkitd.conf" --apps-dir "$work/apps.d" \
  --state-dir "$work/state" 2>> "$work/daemon.log" &
daemon=$!
pids+=($daemon)
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { cat "$work/daemon.log"; echo "sensorkitd did not start"; exit 1; }

/usr/bin/python3 - "$socket" "$app" <<'PY'
import json, socket, struct, sys
def frame(obj):
    b = json.dumps(obj).encode()
    return struct.pack("<I", len(b) + 1) + b"\x01" + b
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
s.sendall(frame({"id": 1, "op": "hello", "v": 1, "app": sys.argv[2]}))
for i, sensor in enumerate(["com.apple.SensorKit.heart.rate", "com.apple.SensorKit.ECG"]):
    s.sendall(frame({"id": 2 + i, "op": "startRecording", "sensor": sensor}))
import time; time.sleep(1); s.close()
PY
for _ in $(seq 150); do grep -q "PMD ecg streaming" "$work/daemon.log" && break; sleep 0.1; done
grep -q "PMD ecg streaming" "$work/daemon.log" || { cat "$work/daemon.log"; echo "ECG never started"; exit 1; }
rss() { awk '/^VmRSS:/ {print $2}' "/proc/$daemon/status"; }
start_lines=$(wc -l < "$work/daemon.log")
start_lost=$(grep -c "#com.apple.SensorKit.ECG: lost" "$work/daemon.log" || true)
echo "-- ${seconds} s of 10,000 good/undecodable ECG frame pairs a second beside an honest strap"
echo "RSS at the start: $(rss) KiB"
for t in $(seq 10 10 "$seconds"); do
  sleep 10
  kill -0 "$daemon" 2>/dev/null || { tail -20 "$work/daemon.log"; echo "sensorkitd died"; exit 1; }
  echo "after ${t} s: RSS $(rss) KiB, $(( $(wc -l < "$work/daemon.log") - start_lines )) log lines"
done
lines=$(( $(wc -l < "$work/daemon.log") - start_lines ))
lost=$(( $(grep -c "#com.apple.SensorKit.ECG: lost" "$work/daemon.log" || true) - start_lost ))
strap=$(grep -c "C0:FF:EE:00:00:01#com.apple.SensorKit.heart.rate: lost" "$work/daemon.log" || true)
echo "ECG deletion records ('lost' lines): $lost in ${seconds} s ($(awk "BEGIN {printf \"%.2f\", $lost / $seconds}") a second)"
echo "log lines: $lines in ${seconds} s ($(awk "BEGIN {printf \"%.2f\", $lines / $seconds}") a second)"
echo "the honest strap's heart-rate gaps: $strap"
echo "whole run, from the ECG start (the first records are written before the run settles):"
echo "  $(grep -c "#com.apple.SensorKit.ECG: lost" "$work/daemon.log" || true) ECG records, $(wc -l < "$work/daemon.log") log lines; the log's last lines:"
tail -5 "$work/daemon.log" | cut -c1-240

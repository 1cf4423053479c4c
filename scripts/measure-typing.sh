#!/bin/bash
# The daemon's CPU for keyboardMetrics while someone types (docs/measurements/device-usage.md):
# the real sensorkitd under umockdev with the emulated keyboard (Tests/Fixtures/evdev), a study app
# recording keyboardMetrics, keys pressed and released at RATE a second for SECONDS; CPU over
# the typing, scaled to the issue's typical 40 keys a minute.
#   scripts/measure-typing.sh [BUILD_DIR] [SECONDS] [RATE]
set -u
B=${1:-.build/debug}; N=${2:-30}; RATE=${3:-10}
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/soak/lib/study-app.bash"
D=$(mktemp -d /tmp/skmeasure-typing-XXXXXX)
node=/dev/input/event3
# A scan code, the press, the release (SYN after each), RATE keys a second, N+12 seconds of them
# from 1 s on; times as seconds.microseconds without zero padding (umockdev reads a leading 0 as octal).
awk -v node=$node -v rate=$RATE -v n=$N 'BEGIN {
  print "# device " node; gap = int(1000000 / rate); t = 1000000; codes[0] = 30; codes[1] = 48; codes[2] = 57
  for (i = 0; i < rate * (n + 12); i++) {
    c = codes[i % 3]
    printf "E: %d.%d 0004 0004 %d\n", t / 1000000, t % 1000000, c + 458752
    printf "E: %d.%d 0001 %04x 1\n", t / 1000000, t % 1000000, c
    printf "E: %d.%d 0000 0000 0\n", t / 1000000, t % 1000000
    t += int(gap / 4)
    printf "E: %d.%d 0001 %04x 0\n", t / 1000000, t % 1000000, c
    printf "E: %d.%d 0000 0000 0\n", t / 1000000, t % 1000000
    t += gap - int(gap / 4)
  }
}' > $D/typing.events
mkdir -p $D/apps.d $D/state
write_study_app $D/apps.d org.sensorkit.measure "Typing" "keyboard-metrics" "$(id -un)"
printf 'profile = lab\n[keyboard]\ninterval = 10s\n[grant org.sensorkit.measure]\nsensors = keyboardMetrics\n' > $D/sensorkitd.conf
timeout --kill-after=3 $((N+60)) /usr/bin/umockdev-run -d "$top/Tests/Fixtures/evdev/keyboard.umockdev" \
  -i $node="$top/Tests/Fixtures/evdev/keyboard.ioctl" -e $node=$D/typing.events -- \
  $B/sensorkitd --socket $D/s.sock --config $D/sensorkitd.conf --apps-dir $D/apps.d --state-dir $D/state >$D/daemon.log 2>&1 &
P=$!
for i in $(seq 50); do [ -S $D/s.sock ] && break; sleep 0.2; done
PYTHONPATH="$top/clients/python" /usr/bin/python3 - "$D/s.sock" <<'PY' || echo "could not start recording keyboardMetrics"
import sys, sensorkit_client as sk
c = sk.SensorKitClient(sys.argv[1], timeout=10); c.hello(app="org.sensorkit.measure")
c.start_recording("com.apple.SensorKit.keyboardMetrics"); c.close()
PY
sleep 3
DPID=$(pgrep -x sensorkitd -P $(pgrep -P $P | head -1) 2>/dev/null || pgrep -n -x sensorkitd)
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
d0=$(ticks $DPID)
sleep $N
d1=$(ticks $DPID)
HZ=$(getconf CLK_TCK)
echo "typing $RATE keys/s for ${N}s (×$(awk "BEGIN{printf \"%.0f\", $RATE*60/40}") the typical 40 keys a minute): daemon $((d1-d0)) ticks ($(awk "BEGIN{printf \"%.3f\", 100*($d1-$d0)/$HZ/$N}")% of a core), scaled to 40 keys a minute: ≤ $(awk "BEGIN{printf \"%.4f\", 100*($d1-$d0)/$HZ/$N/($RATE*60/40)}")% of a core"
echo
# The typing was counted: taps in the keyboardMetrics reports closed so far (lab profile: hold 0).
PYTHONPATH="$top/clients/python" /usr/bin/python3 - "$D/s.sock" <<'PY'
import sys, sensorkit_client as sk
sensor = "com.apple.SensorKit.keyboardMetrics"
c = sk.SensorKitClient(sys.argv[1], timeout=10); c.hello(app="org.sensorkit.measure")
taps = 0
for device in c.fetch_devices(sensor):
    batch, _ = c.fetch_all(sensor, 0, c.now_ns(), device=device["identifier"])
    if batch:
        taps += sum(batch["columns"].get("totalTaps", batch["columns"].get(list(batch["columns"])[1], [])))
print("keys counted in the reports closed so far: %d" % taps)
c.close()
PY
kill $P 2>/dev/null; wait $P 2>/dev/null; rm -rf $D

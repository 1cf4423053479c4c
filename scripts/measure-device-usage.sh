#!/bin/bash
# Idle CPU and wake-ups of sensorkitd + sensorkit-session on private buses (docs/measurements/device-usage.md):
#   scripts/measure-device-usage.sh [BUILD_DIR] [SECONDS]
set -u
B=${1:-.build/debug}; N=${2:-60}
D=$(mktemp -d /tmp/skmeasure-XXXXXX)
conf() { sed "s#@@#$1#" > "$D/$2" <<'X'
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN" "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:path=@@</listen><auth>EXTERNAL</auth>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
X
}
conf $D/sys sys.conf; conf $D/sess sess.conf
timeout $((3*N+150)) dbus-daemon --config-file=$D/sys.conf --nofork --nopidfile >/dev/null 2>&1 & P1=$!
timeout $((3*N+150)) dbus-daemon --config-file=$D/sess.conf --nofork --nopidfile >/dev/null 2>&1 & P2=$!
sleep 0.5
SYS=unix:path=$D/sys; SESS=unix:path=$D/sess
DBUS_SYSTEM_BUS_ADDRESS=$SYS timeout $((3*N+150)) /usr/bin/python3 -m dbusmock --system --template logind >/dev/null 2>&1 & P3=$!
DBUS_SESSION_BUS_ADDRESS=$SESS timeout $((3*N+150)) /usr/bin/python3 -m dbusmock --template notification_daemon >/dev/null 2>&1 & P4=$!
sleep 2
busctl --address=$SYS -- call org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.DBus.Mock AddSession ssusb c1 seat0 $(id -u) me true >/dev/null
mkdir -p $D/apps.d $D/state; printf 'profile = lab\n' > $D/sensorkitd.conf
DBUS_SYSTEM_BUS_ADDRESS=$SYS timeout $((3*N+150)) $B/sensorkitd --socket $D/s.sock --config $D/sensorkitd.conf --apps-dir $D/apps.d --state-dir $D/state >$D/daemon.log 2>&1 & P5=$!
sleep 2
DBUS_SESSION_BUS_ADDRESS=$SESS timeout $((3*N+150)) $B/sensorkit-session --socket $D/s.sock >$D/agent.log 2>&1 & P6=$!
sleep 2
DPID=$(pgrep -P $P5 sensorkitd || echo $P5); APID=$(pgrep -P $P6 sensorkit-sess || echo $P6)
ticks() { awk '{print $14+$15}' /proc/$1/stat; }
switches() { local s=0; for t in /proc/$1/task/*; do v=$(awk '/^voluntary_ctxt_switches|^nonvoluntary_ctxt_switches/ {s+=$2} END {print s}' $t/status); s=$((s+v)); done; echo $s; }
d0=$(ticks $DPID); a0=$(ticks $APID); ds0=$(switches $DPID); as0=$(switches $APID)
sleep $N
d1=$(ticks $DPID); a1=$(ticks $APID); ds1=$(switches $DPID); as1=$(switches $APID)
HZ=$(getconf CLK_TCK)
echo "idle ${N}s: daemon cpu $(( (d1-d0) )) ticks ($(awk "BEGIN{printf \"%.3f\", 100*($d1-$d0)/$HZ/$N}")% of a core), context switches $((ds1-ds0)); agent cpu $((a1-a0)) ticks ($(awk "BEGIN{printf \"%.3f\", 100*($a1-$a0)/$HZ/$N}")% of a core), context switches $((as1-as0))"
timeout 30 strace -f -p $APID -o $D/agent.strace 2>/dev/null; echo "agent syscalls while idle for 30 s (strace -f): $(grep -v -c 'resumed>\|+++\|---' $D/agent.strace) — $(cut -d' ' -f3- $D/agent.strace | sed 's/(.*//' | sort | uniq -c | sort -rn | head -5 | tr '\n' ';')"
# busy: 2 notifications a minute for N/2 seconds compressed: 20 notifications
a0=$(ticks $APID); d0=$(ticks $DPID)
for i in $(seq 1 20); do busctl --address=$SESS -- call org.freedesktop.Notifications /org/freedesktop/Notifications org.freedesktop.Notifications Notify susssasa{sv}i app 0 "" s b 0 0 -1 >/dev/null; done
sleep 1
a1=$(ticks $APID); d1=$(ticks $DPID)
echo "20 notifications: daemon $((d1-d0)) ticks, agent $((a1-a0)) ticks (1 tick = 1/$HZ s)"

# Typical use, compressed (root, sway and foot: `make test` installs them): the daemon records
# deviceUsageReport for a study app; the agent watches a headless sway whose focus moves between
# two foot windows once a second (36× the issue's 100 changes an hour) while a notification comes
# every 2 s (15× its 2 a minute). CPU over N s is then scaled down to the typical rates.
if [ "$(id -u)" = 0 ] && [ -x /usr/bin/sway ] && [ -x /usr/bin/foot ]; then
  . "$(dirname "$0")/soak/lib/study-app.bash"
  write_study_app $D/apps.d org.sensorkit.measure "Device usage" "device-usage" root
  printf 'profile = lab\n[grant org.sensorkit.measure]\nsensors = deviceUsageReport\n' > $D/sensorkitd.conf
  kill -HUP $DPID; sleep 1
  PYTHONPATH=$(dirname "$0")/../clients/python /usr/bin/python3 - "$D/s.sock" <<'PY' || echo "could not start recording deviceUsageReport"
import sys, sensorkit_client as sk
c = sk.SensorKitClient(sys.argv[1], timeout=10); c.hello(app="org.sensorkit.measure")
c.start_recording("com.apple.SensorKit.deviceUsageReport"); c.close()
PY
  W=$(mktemp -d /tmp/skmeasure-sway-XXXXXX); chmod 755 $W; mkdir $W/run; chown 65534:65534 $W/run; chmod 700 $W/run
  printf 'output HEADLESS-1 resolution 640x480\n' > $W/sway.conf
  nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- env -i PATH=/usr/bin:/bin HOME=$W XDG_RUNTIME_DIR=$W/run "$@"; }
  nobody WLR_BACKENDS=headless WLR_RENDERER=pixman WLR_LIBINPUT_NO_DEVICES=1 timeout $((3*N+150)) sway -c $W/sway.conf >$D/sway.log 2>&1 & P7=$!
  for i in $(seq 50); do [ -S $W/run/wayland-1 ] && ls $W/run/sway-ipc.* >/dev/null 2>&1 && break; sleep 0.2; done
  WL=$W/run/wayland-1; IPC=$(ls $W/run/sway-ipc.* | head -1)
  kill $P6; wait $P6 2>/dev/null
  DBUS_SESSION_BUS_ADDRESS=$SESS WAYLAND_DISPLAY=$WL timeout $((3*N+150)) $B/sensorkit-session --socket $D/s.sock >$D/agent2.log 2>&1 & P6=$!
  for app in org.example.Maps org.example.Chat; do
    nobody WAYLAND_DISPLAY=$WL timeout $((3*N+150)) foot --app-id=$app sh -c "sleep $((3*N+150))" >/dev/null 2>&1 &
    sleep 1
  done
  sleep 2; APID=$(pgrep -P $P6 sensorkit-sess || echo $P6)
  grep -q "watching the compositor" $D/agent2.log || echo "the agent is not watching the compositor: $(cat $D/agent2.log)"
  a0=$(ticks $APID); d0=$(ticks $DPID); as0=$(switches $APID)
  for i in $(seq 1 $N); do
    nobody SWAYSOCK=$IPC swaymsg "[app_id=\"org.example.$([ $((i % 2)) = 0 ] && echo Maps || echo Chat)\"] focus" >/dev/null
    [ $((i % 2)) = 0 ] && busctl --address=$SESS -- call org.freedesktop.Notifications /org/freedesktop/Notifications org.freedesktop.Notifications Notify susssasa{sv}i app 0 "" s b 0 0 -1 >/dev/null
    sleep 1
  done
  a1=$(ticks $APID); d1=$(ticks $DPID); as1=$(switches $APID)
  echo "typical use ×36 focus, ×15 notifications for ${N}s: daemon $((d1-d0)) ticks ($(awk "BEGIN{printf \"%.3f\", 100*($d1-$d0)/$HZ/$N}")% of a core), agent $((a1-a0)) ticks ($(awk "BEGIN{printf \"%.3f\", 100*($a1-$a0)/$HZ/$N}")% of a core, $((as1-as0)) context switches); scaled to a typical day (÷15): daemon ≤ $(awk "BEGIN{printf \"%.4f\", 100*($d1-$d0)/$HZ/$N/15}")%, agent ≤ $(awk "BEGIN{printf \"%.4f\", 100*($a1-$a0)/$HZ/$N/15}")%"
  kill $P7 2>/dev/null; pkill -f "foot --app-id=org.example" 2>/dev/null; rm -rf $W
fi
kill $P6 $P5 $P4 $P3 $P1 $P2 2>/dev/null; wait 2>/dev/null; rm -rf $D

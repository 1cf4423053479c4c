#!/usr/bin/env bash
# No local user can crash the daemon by connecting, nor exhaust its descriptors
# (docs/reliability.md, "Connection churn" and "Descriptors"): the real sensorkitd (release
# build in $1) under LimitNOFILE=1024 while a 200 Hz demo rig records.
#   1. churn: four clients at once (two as nobody) make $CHURN_CONNECTIONS connections each
#      (default 75,000: 300,000 in all) of every kind (scripts/soak/churn.py);
#   2. fetch flood: nobody, as an app, opens 112 connections x 16 fetches it never acknowledges
#      for 20 s while the same app as root fetches every half second.
# Prints the figures: connections survived, the daemon's peak descriptors and RSS, the other
# fetches' latency and failures, error lines in the log. ~6 min.
set -euo pipefail
source "$(dirname "$0")/lib/study-app.bash"
bin=$(cd "${1:-.build/release}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
per_client=${CHURN_CONNECTIONS:-75000}
work=$(mktemp -d /tmp/skd-churn-XXXXXX)
chmod 755 "$work"
app=org.example.churn
daemon_pid=""
stop_daemon() { stop_group "$daemon_pid"; daemon_pid=""; }
trap 'stop_daemon; rm -rf "$work"' EXIT

write_study_app "$work/apps.d" "$app" "churn soak" "motion-accelerometer" "$(id -un) nobody"
printf 'profile = lab\n[grant %s]\nsensors = accelerometer\n' "$app" > "$work/sensorkitd.conf"
cp "$top/scripts/soak/churn.py" "$top/scripts/soak/fetch_flood.py" "$work/"
chmod 755 "$work"/*.py
socket="$work/s.sock"
ctl() { "$bin/sensorkitctl" --socket "$socket" "$@"; }
py=/usr/bin/python3
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$py" "$@"; }

/usr/bin/python3 "$top/scripts/demo_rig.py" 200 --lead 0 > "$work/bmi160.script"
setsid prlimit --nofile=1024:1024 timeout --kill-after=3 900 umockdev-run -d "$top/Tests/Fixtures/iio/bmi160.umockdev" \
  -s "/dev/iio:device0=$work/bmi160.script" -- "$bin/sensorkitd" --socket "$socket" --config "$work/sensorkitd.conf" \
  --apps-dir "$work/apps.d" --state-dir "$work/state" 2>> "$work/daemon.log" &
daemon_pid=$!
for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
[ -S "$socket" ] || { cat "$work/daemon.log"; echo "sensorkitd did not start"; exit 1; }
pid=$(pgrep -n -x sensorkitd -s "$daemon_pid")
"$py" "$top/clients/python/sensorkit_client.py" --socket "$socket" --app "$app" start accelerometer >/dev/null
grep -m1 'reader limits' "$work/daemon.log"

# peak of the daemon's descriptors and RSS, sampled every 50 ms until $work/stop-watch exists
watch_daemon() {
  local fds=0 rss=0 n r
  while [ ! -e "$work/stop-watch" ] && kill -0 "$pid" 2>/dev/null; do
    n=$(ls /proc/$pid/fd 2>/dev/null | wc -l); [ "$n" -gt "$fds" ] && fds=$n
    r=$(awk '/VmRSS/ {print int($2/1024)}' /proc/$pid/status 2>/dev/null || echo 0); [ "$r" -gt "$rss" ] && rss=$r
    sleep 0.05
  done
  echo "$fds $rss" > "$work/peaks"
}

echo "== 1. churn: 4 clients x $per_client connections of every kind (2 as nobody)"
rm -f "$work/stop-watch"; watch_daemon & watcher=$!
start=$(date +%s)
clients=()
for i in 1 2 3 4; do
  if [ $((i % 2)) -eq 0 ]; then nobody "$work/churn.py" "$socket" "$per_client" "$app" > "$work/churn$i.out" &
  else "$py" "$work/churn.py" "$socket" "$per_client" "$app" > "$work/churn$i.out" & fi
  clients+=($!)
done
status=0; for client in "${clients[@]}"; do wait "$client" || status=1; done
touch "$work/stop-watch"; wait "$watcher"
cat "$work"/churn*.out
alive=no; kill -0 "$pid" 2>/dev/null && alive=yes
echo "seconds: $(( $(date +%s) - start )); daemon alive: $alive; clients' status: $status"
read -r fds rss < "$work/peaks"; echo "daemon peak descriptors: $fds; peak RSS: $rss MB"
echo "connections open afterwards: $(ctl status 2>/dev/null | grep -o 'connections[^,]*' | head -1)"
[ "$alive" = yes ] || { tail -20 "$work/daemon.log"; exit 1; }

echo "== 2. fetch flood: nobody as $app, 112 connections x 16 fetches never acknowledged, for 20 s"
rm -f "$work/stop-watch"; watch_daemon & watcher=$!
nobody "$work/fetch_flood.py" "$socket" "$app" 112 16 20 > "$work/flood.out" &
flood=$!
"$py" - "$socket" "$app" 20 <<'PY'
import json, socket, struct, sys, time
path, app, seconds = sys.argv[1], sys.argv[2], float(sys.argv[3])
def frame(o):
    b = json.dumps(o).encode(); return struct.pack("<I", len(b) + 1) + b"\x01" + b
def fetch():
    s = socket.socket(socket.AF_UNIX); s.settimeout(30); s.connect(path)
    s.sendall(frame({"id": 1, "op": "hello", "v": 1, "app": app}) + frame({"id": 2, "op": "fetch",
              "sensor": "com.apple.SensorKit.motion.accelerometer", "from": 0, "to": 9000000000000000, "window": 1000}))
    buf = b""; samples = 0
    while True:
        while len(buf) >= 5 and len(buf) >= 4 + struct.unpack("<I", buf[:4])[0]:
            size = struct.unpack("<I", buf[:4])[0]; kind, payload, buf = buf[4], buf[5:4 + size], buf[4 + size:]
            if kind == 1:
                r = json.loads(payload)
                if r.get("id") == 2: s.close(); return r.get("error")
            else:  # a batch or a chunk: acknowledged, as a client does
                s.sendall(frame({"id": 3, "op": "ack", "target": 2, "batches": 1}))
        chunk = s.recv(1 << 20)
        if not chunk: s.close(); return {"message": "connection closed"}
        buf += chunk
time.sleep(2); end = time.time() + seconds - 2; worst = 0; failed = 0; done = 0; last = None
while time.time() < end:
    t = time.time()
    try: err = fetch()
    except OSError as e: err = {"message": str(e)}
    worst = max(worst, time.time() - t); done += 1
    if err: failed += 1; last = err
    time.sleep(0.5)
print("the app's own fetches (root) during the flood: %d, failed: %d%s; slowest: %.2f s"
      % (done, failed, "" if last is None else " (last: %s)" % last.get("message", last), worst))
PY
wait "$flood" || true
touch "$work/stop-watch"; wait "$watcher"
echo "flooder: $(cat "$work/flood.out")"
read -r fds rss < "$work/peaks"; echo "daemon peak descriptors: $fds (limit 1024); peak RSS: $rss MB"
alive=no; kill -0 "$pid" 2>/dev/null && alive=yes
echo "daemon alive: $alive"
echo "error lines in the log: $(grep -c '^<[0-3]>' "$work/daemon.log" || true)"
grep -m 5 '^<[0-3]>' "$work/daemon.log" || true
stop_daemon
[ "$alive" = yes ]

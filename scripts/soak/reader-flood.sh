#!/usr/bin/env bash
# Local users cannot stall the daemon (docs/reliability.md): the real sensorkitd (release build
# in $1) against the floods of issue 12 — connections from `nobody` that pipeline requests and
# never read (5 for 3 s, 20 for 10 s), 1,100 idle connections under LimitNOFILE=1024, and a fetch
# parked without acks for 100 s while a 200 Hz demo rig records. Prints the figures. ~4 min.
set -euo pipefail
source "$(dirname "$0")/lib/study-app.bash"
bin=$(cd "${1:-.build/release}" && pwd)
top=$(cd "$(dirname "$0")/../.." && pwd)
python=${SENSORKIT_PYTHON:-/usr/bin/python3}   # Debian's interpreter, as in the tests
work=$(mktemp -d /tmp/skd-flood-XXXXXX)
chmod 755 "$work"
app=org.example.flood
daemon_pid=""
stop_daemon() { stop_group "$daemon_pid"; daemon_pid=""; }
trap 'stop_daemon; rm -rf "$work"' EXIT

write_study_app "$work/apps.d" "$app" "flood soak" "motion-accelerometer motion-rotation-rate" "$(id -un)"
cat > "$work/sensorkitd.conf" <<CONF
profile = lab
[grant $app]
sensors = accelerometer, rotationRate
[reader]
fetch-idle-timeout = 10m   # longer than the run: only parking can keep the log from growing
CONF
socket="$work/s.sock"

# start_daemon [prefix command…]: sensorkitd on $socket, logging to $work/daemon.log
start_daemon() {
  rm -f "$socket"
  setsid "$@" "$bin/sensorkitd" --socket "$socket" --config "$work/sensorkitd.conf" --apps-dir "$work/apps.d" \
    --state-dir "$work/state" 2>> "$work/daemon.log" &
  daemon_pid=$!
  for _ in $(seq 100); do [ -S "$socket" ] && break; sleep 0.1; done
  [ -S "$socket" ] || { cat "$work/daemon.log"; echo "sensorkitd did not start"; exit 1; }
}

cat > "$work/flood.py" <<'PY'
import json, os, socket, struct, sys, threading, time
def frame(obj):
    b = json.dumps(obj).encode()
    return struct.pack("<I", len(b) + 1) + b"\x01" + b
def replies(s, n=1, timeout=30):
    s.settimeout(timeout); buf = b""; out = []
    while len(out) < n:
        while len(buf) >= 5 and len(buf) >= 4 + struct.unpack("<I", buf[:4])[0]:
            size = struct.unpack("<I", buf[:4])[0]
            kind, payload, buf = buf[4], buf[5:4 + size], buf[4 + size:]
            if kind == 1: out.append(json.loads(payload))
        if len(out) >= n: break
        chunk = s.recv(65536)
        if not chunk: break
        buf += chunk
    return out
def connect(path, app=None):
    s = socket.socket(socket.AF_UNIX); s.connect(path)
    hello = {"id": 1, "op": "hello", "v": 1}
    if app: hello["app"] = app
    s.sendall(frame(hello)); replies(s)
    return s
def rss(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"): return int(line.split()[1]) // 1024
def cpu(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])
mode, path = sys.argv[1], sys.argv[2]
if mode == "pipeline":          # as nobody: N connections pipeline `sensors` for S seconds, never read
    n, seconds = int(sys.argv[3]), float(sys.argv[4])
    conns = [connect(path) for _ in range(n)]
    req = frame({"id": 5, "op": "sensors"}) * 512
    end = time.time() + seconds; sent = [0] * n
    for c in conns: c.setblocking(False)
    while time.time() < end:
        for i, c in enumerate(conns):
            try: sent[i] += c.send(req)
            except BlockingIOError: pass
        time.sleep(0.001)
    print("requests written per connection (max): %d" % (max(sent) // len(frame({"id": 5, "op": "sensors"}))))
    sys.stdout.flush(); time.sleep(float(sys.argv[5]) if len(sys.argv) > 5 else 0)
elif mode == "idle":            # as nobody: N idle connections, held for S seconds
    n, seconds = int(sys.argv[3]), float(sys.argv[4])
    conns = []
    for _ in range(n):
        try: s = socket.socket(socket.AF_UNIX); s.connect(path); conns.append(s)
        except OSError as e: print("connect failed: %s" % e); break
    time.sleep(2)
    refused = 0
    for s in conns:
        s.setblocking(False)
        try:
            data = s.recv(65536)
            if b'"code":103' in data: refused += 1
        except BlockingIOError: pass
    print("idle connections opened: %d, refused with error 103: %d" % (len(conns), refused))
    sys.stdout.flush(); time.sleep(seconds)
elif mode == "watch":           # as the app: answer time, daemon RSS, queue and CPU while a flood runs
    app, pid, seconds = sys.argv[3], int(sys.argv[4]), float(sys.argv[5])
    admin = connect(path); slowest = 0; queued = 0; peak = rss(pid); t0 = time.time(); c0 = cpu(pid)
    while time.time() - t0 < seconds:
        start = time.time()
        try:
            s = connect(path, app); s.sendall(frame({"id": 2, "op": "status"})); r = replies(s, 1, timeout=60); s.close()
        except OSError as e:
            r = [{"error": str(e)}]
        slowest = max(slowest, time.time() - start)
        admin.sendall(frame({"id": 3, "op": "daemonStatus"})); info = replies(admin, 1)[0].get("info", {})
        queued = max(queued, int(info.get("maxQueuedRequests", "-1")))
        peak = max(peak, rss(pid)); time.sleep(0.25)
    print("app answered within (slowest): %.3f s; requests queued per connection (max): %d; daemon RSS (max): %d MB; daemon CPU: %.0f %%"
          % (slowest, queued, peak, (cpu(pid) - c0) / os.sysconf("SC_CLK_TCK") / (time.time() - t0) * 100))
elif mode == "fetches":         # running fetches, from daemonStatus
    admin = connect(path); admin.sendall(frame({"id": 3, "op": "daemonStatus"}))
    print(replies(admin, 1)[0].get("info", {}).get("fetches"))
elif mode == "park":            # as the app: a fetch with window 1, never acknowledged, never read
    s = connect(path, sys.argv[3])
    s.sendall(frame({"id": 7, "op": "fetch", "sensor": "com.apple.SensorKit.motion.accelerometer",
                     "from": 0, "to": 9000000000000000, "window": 1}))
    time.sleep(float(sys.argv[4]))
PY
nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups -- "$python" "$work/flood.py" "$@"; }
ctl() { "$bin/sensorkitctl" --socket "$socket" "$@"; }

echo "== 1. connections from nobody that pipeline requests and never read"
start_daemon
pid=$daemon_pid
echo "daemon RSS before: $(( $(awk '/VmRSS/ {print $2}' /proc/$pid/status) / 1024 )) MB"
for run in "5 3" "20 10"; do
  set -- $run
  echo "-- $1 connections for $2 s"
  nobody pipeline "$socket" "$1" "$2" 1 &
  flood=$!
  "$python" "$work/flood.py" watch "$socket" "$app" "$pid" "$(( $2 + 1 ))"
  wait $flood || { echo "the flood as nobody failed"; exit 1; }
done
echo "daemon RSS after: $(( $(awk '/VmRSS/ {print $2}' /proc/$pid/status) / 1024 )) MB"
stop_daemon

echo "== 2. 1,100 idle connections from nobody, LimitNOFILE=1024"
: > "$work/daemon.log"
start_daemon prlimit --nofile=1024:1024
pid=$daemon_pid
nobody idle "$socket" 1100 8 &
idle=$!
sleep 3
"$python" "$work/flood.py" watch "$socket" "$app" "$pid" 3
wait $idle
echo "log lines about refused or failed accepts: $(grep -c 'refused .* connection\|accept on' "$work/daemon.log" || true)"
grep -m 2 'refused .* connection\|accept on' "$work/daemon.log" || true
stop_daemon

echo "== 3. a fetch parked without acks for 100 s while a 200 Hz rig records (accelerometer and gyroscope, 100 Hz each)"
: > "$work/daemon.log"
"$python" "$top/scripts/demo_rig.py" 200 --lead 0 > "$work/bmi160.script"
rm -rf "$work/state"
start_daemon timeout --kill-after=3 240 umockdev-run -d "$top/Tests/Fixtures/iio/bmi160.umockdev" \
  -s "/dev/iio:device0=$work/bmi160.script" --
"$python" "$top/clients/python/sensorkit_client.py" --socket "$socket" --app "$app" start accelerometer >/dev/null
"$python" "$top/clients/python/sensorkit_client.py" --socket "$socket" --app "$app" start rotationRate >/dev/null
sleep 90   # 9,000 accelerometer samples: more than one batch (8,192), so the fetch has one to wait with
"$python" "$work/flood.py" park "$socket" "$app" 105 &
parker=$!
sleep 100
wal=$(find "$work/state" -name '*-wal' | head -1)
echo "fetches running (the parked one): $("$python" "$work/flood.py" fetches "$socket")"
echo "WAL after 100 s with the parked fetch: $(( $(stat -c %s "$wal") / 1024 )) KiB"
echo "TRUNCATE checkpoint (busy|log|checkpointed): $(sqlite3 "${wal%-wal}" '.timeout 3000' 'PRAGMA wal_checkpoint(TRUNCATE);')"
wait $parker || true
stop_daemon

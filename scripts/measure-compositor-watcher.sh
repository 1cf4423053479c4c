#!/usr/bin/env bash
# The compositor watcher's CPU time and wake-ups over a stretch of time (docs/measurements/wayland.md):
# a headless sway as nobody with one foot window, compositor-watch-child watching it; first idle
# for SECONDS, then SECONDS with FOCUS_CHANGES focus moves between two windows. Wake-ups are the
# watcher process's context switches, all threads summed (/proc/PID/task/*/status).
#   scripts/measure-compositor-watcher.sh BUILD_DIR [SECONDS] [FOCUS_CHANGES]
set -euo pipefail
build=${1:?build folder with compositor-watch-child}
seconds=${2:-60}
changes=${3:-100}
dir=$(mktemp -d /tmp/skmeasure-XXXXXX)
chmod 755 "$dir"
mkdir -m 700 "$dir/run"
chown 65534:65534 "$dir/run"
printf 'output HEADLESS-1 resolution 640x480\n' >"$dir/sway.conf"
nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
limit=$((seconds * 2 + 60))
pids=()
cleanup() { for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done; sleep 0.5; rm -rf "$dir"; }  # timeout passes TERM on
trap cleanup EXIT
exec 3>&2

env -i PATH=/usr/bin:/bin HOME="$dir" XDG_RUNTIME_DIR="$dir/run" WLR_BACKENDS=headless WLR_RENDERER=pixman \
  WLR_LIBINPUT_NO_DEVICES=1 timeout -s KILL "$limit" "${nobody[@]}" sway -c "$dir/sway.conf" >"$dir/sway.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do ls "$dir/run" | grep -q '^sway-ipc' && ls "$dir/run" | grep -q '^wayland-[0-9]*$' && break; sleep 0.1; done
display="$dir/run/$(ls "$dir/run" | grep '^wayland-[0-9]*$')"
ipc="$dir/run/$(ls "$dir/run" | grep '^sway-ipc')"
client() {
  env -i PATH=/usr/bin:/bin HOME="$dir" XDG_RUNTIME_DIR="$dir/run" WAYLAND_DISPLAY="$display" \
    timeout -s KILL "$limit" "${nobody[@]}" foot --app-id="$1" sh -c "sleep $limit" >/dev/null 2>&1 &
  pids+=($!)
}
msg() { "${nobody[@]}" env SWAYSOCK="$ipc" swaymsg "$@" >/dev/null; }
client measure.a
timeout -s KILL "$limit" "$build/compositor-watch-child" "$display" >"$dir/events" 2>&1 &
pids+=($!)
watcher=""
for _ in $(seq 100); do watcher=$(pgrep -P "$!" || true); [ -n "$watcher" ] && break; sleep 0.05; done  # timeout's child
for _ in $(seq 100); do grep -q 'foreground measure.a' "$dir/events" && break; sleep 0.1; done
grep -q 'foreground measure.a' "$dir/events" || { echo "the watcher did not see the window" >&3; cat "$dir/events" "$dir/sway.log" >&3; exit 1; }
ticks=$(getconf CLK_TCK)
# "CPU_TICKS TID:SWITCHES …": context switches per thread, so a thread that ends between two
# samples is not subtracted from the others.
sample() {
  local line
  line=$(awk '{ print $14 + $15 }' "/proc/$watcher/stat")
  for task in /proc/"$watcher"/task/*; do
    line+=" ${task##*/}:$(awk '/ctxt_switches/ { s += $2 } END { print s }' "$task/status" 2>/dev/null || echo 0)"
  done
  echo "$line"
}
report() {
  local label=$1 before=$2 after=$3
  awk -v l="$label" -v b="$before" -v a="$after" -v t="$ticks" -v secs="$seconds" 'BEGIN {
    nb = split(b, B, " "); na = split(a, A, " ")
    for (i = 2; i <= nb; i++) { split(B[i], kv, ":"); start[kv[1]] = kv[2] }
    s = 0
    for (i = 2; i <= na; i++) { split(A[i], kv, ":"); s += kv[2] - ((kv[1] in start) ? start[kv[1]] : 0) }
    c = A[1] - B[1]
    printf "%s: CPU %.2f s over %d s (%.3f %% of a core), %d context switches (%.2f per second), threads %d then %d\n", l, c / t, secs, 100 * c / t / secs, s, s / secs, nb - 1, na - 1
  }'
}
sleep 10  # Dispatch's worker threads from start-up wind down first
start=$(sample)
sleep "$seconds"
idle=$(sample)
report "idle, one window" "$start" "$idle"
client measure.b
for _ in $(seq 100); do grep -q 'foreground measure.b' "$dir/events" && break; sleep 0.1; done
before=$(sample)
pause=$(awk -v s="$seconds" -v n="$changes" 'BEGIN { printf "%.3f", s / n }')
for i in $(seq "$changes"); do
  if ((i % 2)); then msg '[app_id="measure.a"] focus'; else msg '[app_id="measure.b"] focus'; fi
  sleep "$pause"
done
after=$(sample)
report "$changes focus changes" "$before" "$after"
echo "watcher process: $(cat /proc/"$watcher"/comm)"
echo "events seen: $(grep -c foreground "$dir/events") foreground lines"

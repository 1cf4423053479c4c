#!/usr/bin/env bash
# No loss goes unrecorded (docs/reliability.md): the store in a process of its own
# (store-ingest-child, the real SensorStore ingesting in real time) on an 8 MiB tmpfs at a high
# rate for two minutes, then twenty SIGKILLs of an ingesting store. Prints seconds lost against
# seconds covered by deletion records. Needs root (mount). Usage: loss.sh BUILD_FOLDER
set -euo pipefail
bin="${1:?usage: loss.sh BUILD_FOLDER (e.g. .build/release)}/store-ingest-child"
[ -x "$bin" ] || { echo "loss.sh: $bin not built"; exit 1; }
[ "$(id -u)" = 0 ] || { echo "loss.sh: skipped, mounting a tmpfs needs root"; exit 0; }
seconds="${LOSS_SECONDS:-120}"
kills="${LOSS_KILLS:-20}"
work="$(mktemp -d /tmp/loss-soak-XXXXXX)"
cleanup() { umount -l "$work/disk" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "-- disk full: ${seconds} s at 20 kHz of noise onto an 8 MiB tmpfs, min-free 1 MiB"
mkdir "$work/disk"
mount -t tmpfs -o size=8m tmpfs "$work/disk"
timeout $((seconds + 60)) "$bin" "$work/disk/state" --rate 20000 --noise --min-free 1048576 --seconds "$seconds" > "$work/full.out"
base=$(sed -n 's/^base //p' "$work/full.out")
appended=$(grep '^appended ' "$work/full.out" | tail -1 | cut -d' ' -f2)
df -k "$work/disk" | tail -1 | awk '{print "file system at the end: " $3 " KiB used, " $4 " KiB free"}'
"$bin" report "$work/disk/state" "$base" 20000 "$appended"
umount -l "$work/disk"

echo "-- ${kills} SIGKILLs of an ingesting store (1 kHz), each after 1-3 s"
recorded=0
for i in $(seq 1 "$kills"); do
    dir="$work/kill-$i"
    "$bin" "$dir" > "$work/kill.out" &
    pid=$!
    sleep "$((1 + RANDOM % 2)).$((RANDOM % 10))"
    kill -KILL "$pid"
    wait "$pid" 2>/dev/null || true
    base=$(sed -n 's/^base //p' "$work/kill.out")
    appended=$(grep '^appended ' "$work/kill.out" | tail -1 | cut -d' ' -f2)
    out=$("$bin" report "$dir" "$base" 1000 "$appended")
    lost=$(echo "$out" | sed -n 's/.* lost [0-9]* (\(.*\) s)/\1/p')
    unexplained=$(echo "$out" | sed -n 's/^unexplained \([0-9]*\).*/\1/p')
    crash=$(echo "$out" | sed -n 's/^crash record //p')
    [ "$unexplained" = 0 ] && recorded=$((recorded + 1))
    echo "kill $i: appended $appended, lost $lost s, unexplained samples $unexplained, record: $crash"
    rm -rf "$dir"
done
echo "losses recorded: $recorded of $kills kills"
[ "$recorded" = "$kills" ]

# The daemon's IIO path: the capture hands a stream's samples over in batches of half a second
# (SampleBatcher.maximumSpan), and a SIGKILL loses what waits in the batch besides what the store
# has not committed. Each kill's loss is counted from the kill: samples read before it and not
# stored. LOSS_BATCH=1 measures the one-second batches of before 2026-12-04.
batch="${LOSS_BATCH:-0.5}"
echo "-- ${kills} SIGKILLs of a store fed ${batch} s hand-over batches (1 kHz), each after 1-3 s"
losses=()
for i in $(seq 1 "$kills"); do
    dir="$work/handover-$i"
    "$bin" "$dir" --batch-seconds "$batch" > "$work/kill.out" &
    pid=$!
    sleep "$((1 + RANDOM % 2)).$((RANDOM % 10))"
    kill -KILL "$pid"
    # CLOCK_BOOTTIME in ns (the sample times' clock), read just after the kill: the loss counted
    # from it errs high by the interpreter's start, never low.
    killed=$(/usr/bin/python3 -c 'import time; print(time.clock_gettime_ns(time.CLOCK_BOOTTIME))')
    wait "$pid" 2>/dev/null || true
    base=$(sed -n 's/^base //p' "$work/kill.out")
    # A kill before the first hand-over leaves no "appended" line.
    appended=$(grep '^appended ' "$work/kill.out" | tail -1 | cut -d' ' -f2 || true)
    out=$("$bin" report "$dir" "$base" 1000 "${appended:-0}" "$killed")
    lost=$(echo "$out" | sed -n 's/^read before the kill, not stored \(.*\) s/\1/p')
    unexplained=$(echo "$out" | sed -n 's/^unexplained \([0-9]*\).*/\1/p')
    losses+=("$lost")
    echo "kill $i: lost since the kill $lost s, unexplained samples $unexplained"
    rm -rf "$dir"
done
printf '%s\n' "${losses[@]}" | sort -n | awk '{ v[NR] = $1 } END { m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "loss per kill (read, not stored): median %.3f s, max %.3f s, min %.3f s\n", m, v[NR], v[1] }'

#!/usr/bin/env bash
# Nothing from outside reaches a log unescaped, and no outsider can grow it without bound
# (docs/reliability.md): the real sensorkitd, and one local user sending hello after hello with
# 60 KB app names (plus a newline and a forged <0> priority) for FLOOD_SECONDS (10) as fast as
# refusals come back. Prints the hellos sent and the log's growth in lines and bytes, and fails
# if a forged line or a raw control byte reached it. Usage: hello-flood.sh BUILD_FOLDER
set -euo pipefail
bin="${1:?usage: hello-flood.sh BUILD_FOLDER (e.g. .build/release)}/sensorkitd"
[ -x "$bin" ] || { echo "hello-flood.sh: $bin not built"; exit 1; }
seconds="${FLOOD_SECONDS:-10}"
work="$(mktemp -d /tmp/hello-flood-XXXXXX)"
chmod 755 "$work"
mkdir -m 755 "$work/apps.d"
printf 'profile = lab\n[iio]\nenabled = no\n' > "$work/sensorkitd.conf"
"$bin" --socket "$work/s.sock" --config "$work/sensorkitd.conf" --apps-dir "$work/apps.d" --state-dir "$work/state" 2> "$work/daemon.log" &
daemon=$!
cleanup() { kill "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT
for _ in $(seq 100); do [ -S "$work/s.sock" ] && break; sleep 0.1; done
before_lines=$(wc -l < "$work/daemon.log")
before_bytes=$(wc -c < "$work/daemon.log")

sent=$(timeout $((seconds + 30)) /usr/bin/python3 - "$work/s.sock" "$seconds" <<'PY'
import json, socket, struct, sys, time
path, seconds = sys.argv[1], float(sys.argv[2])
name = "A" * 60_000 + "\n<0>sensorkitd: forged\x1b]0;title\x07"
payload = json.dumps({"id": 1, "op": "hello", "v": 1, "app": name}).encode()
# docs/protocol.md §2: u32 little-endian length (kind byte + payload), u8 kind 1, JSON.
frame = struct.pack("<IB", len(payload) + 1, 1) + payload
sent, end = 0, time.monotonic() + seconds
while time.monotonic() < end:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(frame)
    while s.recv(65536):  # the refusal, then the daemon closes
        pass
    s.close()
    sent += 1
print(sent)
PY
)
sleep 0.5
lines=$(( $(wc -l < "$work/daemon.log") - before_lines ))
bytes=$(( $(wc -c < "$work/daemon.log") - before_bytes ))
echo "hellos with 60 KB names in ${seconds} s: $sent; log grew by $lines lines, $bytes bytes"
if grep -q '^<0>' "$work/daemon.log" || LC_ALL=C grep -q $'[\x01-\x08\x0b-\x1f\x7f]' "$work/daemon.log"; then
    echo "hello-flood.sh: a forged line or a raw control byte reached the log"; exit 1
fi
[ "$lines" -le 2 ]

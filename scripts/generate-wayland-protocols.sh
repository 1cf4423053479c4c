#!/usr/bin/env bash
# Generates the C glue of the wlr protocols that WaylandBridge speaks from their XML in
# Sources/CWaylandProtocols/protocols/ with Debian's wayland-scanner (libwayland-bin): the client
# side into Sources/CWaylandProtocols, and the server headers into Tests/OutputPowerCompositor (the
# tests' stand-in compositor). The interface tables (private code) are the same for both sides: the
# compositor's `*-protocol.c` are symlinks to the client's, so there is one copy. The output is committed, so a clean
# clone builds without the scanner; ProtocolGlueTests runs this script into a scratch folder and
# fails when the committed files differ (docs/wayland.md).
#   scripts/generate-wayland-protocols.sh [OUTPUT_DIR]   (default: the repository; with OUTPUT_DIR,
#   OUTPUT_DIR/Sources/CWaylandProtocols and OUTPUT_DIR/Tests/OutputPowerCompositor)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source_dir="$here/Sources/CWaylandProtocols/protocols"
root=${1:-"$here"}
out="$root/Sources/CWaylandProtocols"
server="$root/Tests/OutputPowerCompositor"
scanner=${WAYLAND_SCANNER:-/usr/bin/wayland-scanner}
[ -x "$scanner" ] || { echo "generate-wayland-protocols: $scanner missing (Debian package libwayland-bin)" >&2; exit 1; }
mkdir -p "$out/include" "$server/include"
for xml in "$source_dir"/*.xml; do
  name=$(basename "$xml" .xml)
  "$scanner" --strict client-header "$xml" "$out/include/$name-client-protocol.h"
  "$scanner" --strict private-code "$xml" "$out/$name-protocol.c"
  "$scanner" --strict server-header "$xml" "$server/include/$name-server-protocol.h"
done

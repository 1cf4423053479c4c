#!/usr/bin/env bash
# Generates the C glue of the wlr protocols that WaylandBridge speaks from their XML in
# Sources/CWaylandProtocols/protocols/ with Debian's wayland-scanner (libwayland-bin). The output is
# committed, so a clean clone builds without the scanner; WaylandProtocolGlueTests runs this script
# into a scratch folder and fails when the committed files differ (docs/wayland.md).
#   scripts/generate-wayland-protocols.sh [OUTPUT_DIR]   (default: Sources/CWaylandProtocols)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
source_dir="$here/Sources/CWaylandProtocols/protocols"
out=${1:-"$here/Sources/CWaylandProtocols"}
scanner=${WAYLAND_SCANNER:-/usr/bin/wayland-scanner}
[ -x "$scanner" ] || { echo "generate-wayland-protocols: $scanner missing (Debian package libwayland-bin)" >&2; exit 1; }
mkdir -p "$out/include"
for xml in "$source_dir"/*.xml; do
  name=$(basename "$xml" .xml)
  "$scanner" --strict client-header "$xml" "$out/include/$name-client-protocol.h"
  "$scanner" --strict private-code "$xml" "$out/$name-protocol.c"
done

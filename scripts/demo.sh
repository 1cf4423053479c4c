#!/usr/bin/env bash
# The daemon's main job on the built-in demo rig. Until the demo rig exists (plan part 6), this
# shows what the current build does for real: the SensorKit catalog and the SR timeline.
set -euo pipefail
bin=${1:-.build/release}
echo "== sensorkitd $("$bin/sensorkitd" --version | cut -d' ' -f2): sensors and their Linux sources"
"$bin/sensorkitctl" sensors
echo "== the SR timeline on this machine"
"$bin/sensorkitctl" time

#!/usr/bin/env bash
# Builds sensorkit-fuzz with libFuzzer and AddressSanitizer and runs each parser's target against
# its committed corpus (Fuzz/corpus/<target>/) for FUZZ_SECONDS each (or FUZZ_RUNS executions).
# New inputs go to a scratch copy, never into the committed corpus; FUZZ_MINIMIZE=1 merges them
# back, minimized. Exits non-zero when any target crashes; the crashing input is kept under
# .build/fuzz/artifacts/<target>/ and replays with `.build/debug/sensorkit-fuzz <target> <file>`
# (the ordinary build) or `SENSORKIT_FUZZ_TARGET=<target> .build/fuzz/debug/sensorkit-fuzz <file>`.
#
#   FUZZ_SECONDS=60  seconds per target (default 60)
#   FUZZ_RUNS=N      stop each target after N executions instead (e.g. 1000000)
#   FUZZ_TARGETS="wire scan"   a subset (default: all five)
#   FUZZ_MINIMIZE=1  replace each committed corpus by the minimized union of it and the new inputs
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

seconds=${FUZZ_SECONDS:-60}
targets=${FUZZ_TARGETS:-"wire scan-type scan manifest configuration"}
scratch=.build/fuzz
# `--sanitize` alone links libFuzzer and ASan; `-Xswiftc -sanitize=…` also instruments every
# Swift module (coverage and ASan checks), not only the fuzz target's own files. Release: the
# optimised parsers run several times as many inputs per second, with overflow checks kept.
swift build -c release --scratch-path "$scratch" --product sensorkit-fuzz \
    --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING
binary="$scratch/release/sensorkit-fuzz"

limit=(-max_total_time="$seconds")
if [[ -n "${FUZZ_RUNS:-}" ]]; then limit=(-runs="$FUZZ_RUNS"); fi

failed=()
for target in $targets; do
    corpus="Fuzz/corpus/$target"
    work="$scratch/work/$target"
    artifacts="$scratch/artifacts/$target/"
    mkdir -p "$corpus" "$work" "$artifacts"
    echo "== $target (${limit[*]})"
    extra=()
    # Foundation's property-list parser leaks its error object on malformed input (swift-corelibs-
    # foundation, not our code): leak checking would stop the manifest target at its first seed.
    # The same leak adds up to ~400 MB over a million inputs, which ASan reports at exit.
    asan=${ASAN_OPTIONS:-}
    if [[ "$target" == manifest ]]; then extra=(-detect_leaks=0); asan=detect_leaks=0; fi
    started=$(date +%s)
    # -timeout: one input taking a second is a hang; -rss_limit_mb: a parser that balloons is a bug.
    if ASAN_OPTIONS=$asan SENSORKIT_FUZZ_TARGET=$target "$binary" "${limit[@]}" "${extra[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -artifact_prefix="$artifacts" "$work" "$corpus" 2>"$scratch/$target.log"; then
        grep -E "^stat::number_of_executed_units|^stat::peak_rss_mb" "$scratch/$target.log" || true
        echo "$target: clean in $(( $(date +%s) - started )) s"
    else
        tail -n 40 "$scratch/$target.log"
        echo "$target: CRASHED; input under $artifacts"
        failed+=("$target")
    fi
    if [[ "${FUZZ_MINIMIZE:-0}" == 1 ]]; then
        merged="$scratch/merged/$target"
        rm -rf "$merged" && mkdir -p "$merged"
        ASAN_OPTIONS=$asan SENSORKIT_FUZZ_TARGET=$target "$binary" "${extra[@]}" -merge=1 "$merged" "$corpus" "$work" 2>>"$scratch/$target.log"
        rm -f "$corpus"/* && cp "$merged"/* "$corpus"/
        echo "$target: corpus minimized to $(ls "$corpus" | wc -l) files"
    fi
done

if (( ${#failed[@]} )); then
    echo "crashed: ${failed[*]}"
    exit 1
fi
echo "all targets clean"

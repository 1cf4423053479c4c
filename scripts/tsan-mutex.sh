#!/usr/bin/env bash
# Shows that ThreadSanitizer reports accesses inside Synchronization.Mutex.withLock as races on
# Linux (docs/reliability.md, "Sanitizers"): four threads append under one Mutex; the count is
# exact, yet TSan warns. Prints the number of warnings and the final count.
set -euo pipefail
export PATH="/opt/swift/usr/bin:$PATH"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cat >"$work/main.swift" <<'SWIFT'
import Dispatch
import Synchronization
final class Box: Sendable {
    struct State { var entries: [Int] = []; var count = 0 }
    let state = Mutex(State())
}
let box = Box()
let group = DispatchGroup()
for thread in 0..<4 {
    DispatchQueue.global().async(group: group) {
        for i in 0..<10_000 {
            box.state.withLock {
                $0.entries.append(i + thread)
                $0.count += 1
                if $0.entries.count > 100 { $0.entries.removeAll() }
            }
        }
    }
}
group.wait()
print("count", box.state.withLock { $0.count }, "(40000 expected)")
SWIFT
swiftc -sanitize=thread -g "$work/main.swift" -o "$work/mutex"
"$work/mutex" 2>"$work/tsan.log" || true  # TSan exits 66 when it reported anything
echo "ThreadSanitizer warnings: $(grep -c 'WARNING: ThreadSanitizer' "$work/tsan.log" || true)"

# sensorkitd — the two README commands are `make demo` and `make test`; `make bench` runs benchmarks.
SWIFT ?= swift
SWIFT_FLAGS ?= -Xswiftc -warnings-as-errors
# Debian's interpreter, whose python3-* packages `make deps` installs (the first python3 on PATH may be
# another build without them); the tests and scripts read the same variable.
export SENSORKIT_PYTHON ?= /usr/bin/python3

.PHONY: deps build test lint format demo bench fuzz soak install deb clean

deps:
	./scripts/install-deps.sh

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

# Every test: the layout lint, then unit, property, crash and end-to-end (umockdev runs are wrapped in timeouts).
test: deps lint
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --parallel --num-workers 2
	cd clients/python && "$(SENSORKIT_PYTHON)" run_tests.py test_protocol_codec test_package test_participant_choices

# The toolchain's `swift format` with the repository's .swift-format; `make format` rewrites the tree to it.
lint:
	$(SWIFT) format lint --strict --recursive --parallel Sources Tests Package.swift

format:
	$(SWIFT) format --in-place --recursive --parallel Sources Tests Package.swift

# The daemon's main job on the built-in demo rig.
demo: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	./scripts/demo.sh .build/release

# Performance figures beside anchors measured in the same run. SECTIONS picks some (default: every one):
# store decode encode fetch iio live ble export daemon; parts alone: live-ble (live's BLE half),
# ble-clock, ble-daemon, ble-bluez (ble's), iio-daemon (iio's whole-daemon battery figures). E.g. `make bench SECTIONS=live` for the lab latency.
SECTIONS ?=
bench: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product sensorkit-bench
	$(STATIC_BUILD) --product sensorkitd  # the sections that start a daemon start it as installed
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product sensorkit-wearable  # live (BLE) and ble-bluez feed from it
	SENSORKIT_BENCH_DAEMON=.build/static/release/sensorkitd .build/release/sensorkit-bench $(SECTIONS)

# Each parser's libFuzzer target for a bounded time (FUZZ_SECONDS per target); crashes become tests.
fuzz: deps
	./scripts/fuzz.sh

# The long reliability runs behind docs/reliability.md: each scripts/soak/*.sh in turn.
soak: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	set -e; for s in scripts/soak/*.sh; do echo "== $$s"; timeout --kill-after=10 1800 bash "$$s" .build/release; done

# An installation (binaries, units, udev rules, default configuration, docs) under DESTDIR, and the
# Debian package of the same tree (docs/configuration.md, "Installing"). The Swift runtime is linked
# statically so the tablet needs no toolchain; its own build folder keeps the demo's build intact.
PREFIX ?= /usr/local
STATIC_BUILD = $(SWIFT) build -c release $(SWIFT_FLAGS) --static-swift-stdlib --scratch-path .build/static
install: deps
	$(STATIC_BUILD)
	./scripts/install.sh .build/static/release "$(DESTDIR)" "$(PREFIX)"

deb: deps
	$(STATIC_BUILD)
	./scripts/deb.sh .build/static/release .build/deb

clean:
	rm -rf .build

# sensorkitd — the two README commands are `make demo` and `make test`; `make bench` runs benchmarks.
SWIFT ?= swift
SWIFT_FLAGS ?= -Xswiftc -warnings-as-errors

.PHONY: deps build test demo bench clean

deps:
	./scripts/install-deps.sh

build: deps
	$(SWIFT) build $(SWIFT_FLAGS)

# Every test: unit, property, crash and end-to-end (umockdev runs are wrapped in timeouts).
test: deps
	$(SWIFT) build --build-tests $(SWIFT_FLAGS)
	$(SWIFT) test --skip-build --parallel --num-workers 2
	cd clients/python && python3 -m unittest -q test_protocol_codec

# The daemon's main job on the built-in demo rig.
demo: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS)
	./scripts/demo.sh .build/release

# Performance figures beside anchors measured in the same run (sections: store fetch iio).
bench: deps
	$(SWIFT) build -c release $(SWIFT_FLAGS) --product sensorkit-bench
	.build/release/sensorkit-bench $(SECTIONS)

clean:
	rm -rf .build

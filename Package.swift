// swift-tools-version:6.0
// sensorkitd — SensorKit for Linux. The targets read bottom-up as the layers of docs/architecture.md:
// C shims → pure core (SensorKitModel, SensorChunks) → Linux edges (SensorSystem, SensorStore,
// bridges) → the daemon (SensorDaemon) → thin executables. The client library (SensorKit) stands
// on the core and SensorSystem only; it never sees the daemon's internals.
import PackageDescription

let strict: [SwiftSetting] = [.enableUpcomingFeature("ExistentialAny")]

let package = Package(
    name: "sensorkitd",
    products: [
        .library(name: "SensorKit", targets: ["SensorKit"]),
        .executable(name: "sensorkitd", targets: ["sensorkitd"]),
        .executable(name: "sensorkitctl", targets: ["sensorkitctl"]),
        .executable(name: "sensorkit-wearable", targets: ["sensorkit-wearable"]),
        .executable(name: "sensorkit-export", targets: ["sensorkit-export"]),
        .executable(name: "sensorkit-session", targets: ["sensorkit-session"]),
    ],
    targets: [
        // C libraries from Debian, one shim module each, nothing else inside.
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CUdev", pkgConfig: "libudev", providers: [.apt(["libudev-dev"])]),
        .systemLibrary(name: "CIIO", pkgConfig: "libiio", providers: [.apt(["libiio-dev"])]),
        .systemLibrary(name: "CBluetooth", pkgConfig: "bluez", providers: [.apt(["libbluetooth-dev"])]),
        // Linux calls that need _GNU_SOURCE (accept4, SO_PEERCRED's struct ucred): two tiny functions.
        .target(name: "CSensorLinux"),
        .systemLibrary(name: "CZstd", pkgConfig: "libzstd", providers: [.apt(["libzstd-dev"])]),
        // CRC-32C with the CPU's crc32 instruction (the chunk checksum): one C function.
        .target(name: "CChecksum"),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CSystemdBus", pkgConfig: "libsystemd", providers: [.apt(["libsystemd-dev"])]),
        .systemLibrary(name: "CEvdev", pkgConfig: "libevdev", providers: [.apt(["libevdev-dev"])]),
        .systemLibrary(name: "CWayland", pkgConfig: "wayland-client", providers: [.apt(["libwayland-dev"])]),
        // The client glue of the two wlr protocols, generated from protocols/*.xml by wayland-scanner
        // and committed (scripts/generate-wayland-protocols.sh; a test regenerates and compares).
        .target(name: "CWaylandProtocols", dependencies: ["CWayland"], exclude: ["protocols"]),

        // Pure core: SensorKit-shaped values, units, the time model. No Glibc, no I/O.
        .target(name: "SensorKitModel", swiftSettings: strict),

        // Linux edges shared by daemon and client: the syscall funnel, clocks, host identity.
        .target(name: "SensorSystem", dependencies: ["SensorKitModel", "CSensorLinux"], swiftSettings: strict),

        // The chunk format: lossless columnar coding of samples, pure functions over bytes.
        // The store writes and reads it; the client decodes chunks a fetch hands over.
        .target(name: "SensorChunks", dependencies: ["CZstd", "CChecksum"], swiftSettings: strict),

        // D-Bus over sd-bus: typed values, one thread per connection (docs/dbus.md).
        .target(name: "SystemBus", dependencies: ["SensorSystem", "CSystemdBus"], swiftSettings: strict),

        // The embargo store: SQLite catalog + compressed columnar chunks.
        .target(
            name: "SensorStore", dependencies: ["SensorKitModel", "SensorSystem", "SensorChunks", "CSQLite"],
            swiftSettings: strict),

        // The IIO bridge: udev discovery, scan decoding, buffered and polled capture.
        .target(
            name: "IIOBridge", dependencies: ["SensorKitModel", "SensorSystem", "Udev", "CIIO"],
            swiftSettings: strict),

        // udev discovery of one subsystem's devices, for the bridges that find hardware through it.
        .target(name: "Udev", dependencies: ["SensorSystem", "CUdev"], swiftSettings: strict),

        // The keyboard bridge: evdev keyboards counted into typing metrics; no key code leaves it.
        .target(
            name: "KeyboardBridge", dependencies: ["SensorKitModel", "SensorSystem", "Udev", "CEvdev"], swiftSettings: strict),

        // Device usage: logind over the system bus, the session agent's events, quarter-hour reports.
        .target(
            name: "UsageBridge", dependencies: ["SensorKitModel", "SensorSystem", "SystemBus"], swiftSettings: strict),

        // The compositor watcher: the foreground app and screen power from a wlroots compositor,
        // for the per-user agent (docs/wayland.md); no window title leaves it.
        .target(
            name: "WaylandBridge", dependencies: ["SensorKitModel", "SensorSystem", "CWayland", "CWaylandProtocols"],
            swiftSettings: strict),

        // The modem bridge: ModemManager's calls and SMS counted into usage reports over SystemBus;
        // no number leaves it (docs/modem.md).
        .target(
            name: "ModemBridge", dependencies: ["SensorKitModel", "SensorSystem", "SystemBus"], swiftSettings: strict),

        // The location bridge: stay points, places and visits from location fixes, and a GeoClue2
        // client over SystemBus; a library for the session agent (docs/visits.md). No coordinate
        // leaves it.
        .target(
            name: "LocationBridge", dependencies: ["SensorKitModel", "SensorSystem", "SystemBus"], swiftSettings: strict),

        // The client library: `import SensorKit` mirrors Apple's framework. It decodes stored
        // chunks a fetch hands over with the store's own chunk decoder (SensorChunks).
        .target(name: "SensorKit", dependencies: ["SensorKitModel", "SensorSystem", "SensorChunks"], swiftSettings: strict),

        // The daemon and its tools.
        .target(
            name: "SensorDaemon",
            dependencies: [
                "SensorKitModel", "SensorSystem", "SensorStore", "IIOBridge", "BLEBridge", "KeyboardBridge", "UsageBridge",
                "ModemBridge", "LocationBridge",
            ],
            swiftSettings: strict),
        .executableTarget(name: "sensorkitd", dependencies: ["SensorDaemon"], swiftSettings: strict),
        .executableTarget(name: "sensorkitctl", dependencies: ["SensorKit", "SensorSystem"], swiftSettings: strict),
        // The study uploader (docs/export.md): a study app that writes released data to PostgreSQL.
        .target(
            name: "SensorExport", dependencies: ["SensorKit", "SensorKitModel", "SensorSystem", "CPostgres"],
            swiftSettings: strict),
        .executableTarget(name: "sensorkit-export", dependencies: ["SensorExport"], swiftSettings: strict),
        // The session agent (docs/device-usage.md): the person's session bus and compositor, reduced
        // to usage events for the daemon; a systemd user unit started with the graphical session.
        .target(
            name: "SessionAgent",
            dependencies: ["SensorKit", "SensorKitModel", "SensorSystem", "SystemBus", "WaylandBridge", "LocationBridge"],
            swiftSettings: strict),
        .executableTarget(name: "sensorkit-session", dependencies: ["SessionAgent"], swiftSettings: strict),
        // Simulated sources and rigs shared by the bench and the tests: a generated accelerometer,
        // an H10's drifting ECG clock, a real daemon on temporary paths, a child-process spawner.
        .target(
            name: "SensorSimulation", dependencies: ["SensorKitModel", "SensorSystem", "SensorDaemon", "SensorKit"],
            swiftSettings: strict),
        // `make bench`: figures beside anchors measured in the same run.
        .executableTarget(
            name: "sensorkit-bench",
            dependencies: [
                "SensorKitModel", "SensorSystem", "SensorStore", "SensorChunks", "IIOBridge",
                "SensorDaemon", "SensorKit", "SensorSimulation", "BLEBridge", "SensorExport", "SystemBus",
            ],
            swiftSettings: strict),

        // Tests.
        .target(
            name: "SensorTestKit", dependencies: ["SensorKitModel", "LocationBridge"], path: "Tests/SensorTestKit",
            swiftSettings: strict),
        .testTarget(name: "SensorKitModelTests", dependencies: ["SensorKitModel", "SensorTestKit"], swiftSettings: strict),
        .testTarget(
            name: "SensorStoreTests", dependencies: ["SensorStore", "SensorChunks", "SensorTestKit"], swiftSettings: strict),
        // Killed with SIGKILL mid-ingest by SensorStoreTests' crash test (found beside the test bundle).
        .executableTarget(
            name: "store-ingest-child", dependencies: ["SensorStore", "SensorSystem"],
            path: "Tests/StoreIngestChild", swiftSettings: strict),
        // Uses the client library in a process of its own for SensorKitTests' allocator test.
        .executableTarget(
            name: "client-allocator-child", dependencies: ["SensorKit", "SensorSystem"],
            path: "Tests/ClientAllocatorChild", swiftSettings: strict),
        .testTarget(name: "IIOBridgeTests", dependencies: ["IIOBridge", "SensorTestKit"], swiftSettings: strict),
        // Run by IIOBridgeTests inside umockdev (enumeration, hotplug), found beside the test bundle.
        .executableTarget(name: "iio-udev-child", dependencies: ["IIOBridge"], path: "Tests/IIOUdevChild", swiftSettings: strict),
        .testTarget(
            name: "UsageBridgeTests",
            dependencies: ["UsageBridge", "SessionAgent", "SystemBus", "SensorSimulation", "SensorTestKit"],
            swiftSettings: strict),
        .testTarget(
            name: "KeyboardBridgeTests", dependencies: ["KeyboardBridge", "Udev", "SensorTestKit"], swiftSettings: strict),
        // Run by KeyboardBridgeTests inside umockdev (an emulated evdev keyboard), found beside the test bundle.
        .executableTarget(
            name: "keyboard-evdev-child", dependencies: ["KeyboardBridge", "SensorKitModel", "SensorSystem"],
            path: "Tests/KeyboardEvdevChild", swiftSettings: strict),
        .testTarget(
            name: "LocationBridgeTests",
            dependencies: ["LocationBridge", "SensorKitModel", "SystemBus", "SensorTestKit", "SensorSimulation"],
            swiftSettings: strict),
        .testTarget(
            name: "ModemBridgeTests", dependencies: ["ModemBridge", "SensorTestKit", "SensorSimulation"],
            swiftSettings: strict),
        .testTarget(
            name: "SensorDaemonTests",
            dependencies: [
                "SensorDaemon", "SensorKit", "AppleStyleStudy", "SensorTestKit", "SensorSimulation", "BLETestKit", "SystemBus",
                "LocationBridge",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "WaylandBridgeTests", dependencies: ["WaylandBridge", "SensorSystem", "SensorSimulation", "SensorTestKit"],
            swiftSettings: strict),
        // WaylandBridgeTests' stand-in compositor for powering an output off, which Debian 12's
        // wlroots cannot do without a DRM device (docs/wayland.md §7): libwayland-server, same XML.
        .executableTarget(
            name: "output-power-compositor", path: "Tests/OutputPowerCompositor",
            linkerSettings: [.linkedLibrary("wayland-server")]),
        // Run by WaylandBridgeTests against a headless sway: prints the watcher's events, one a line.
        .executableTarget(
            name: "compositor-watch-child", dependencies: ["WaylandBridge", "SensorSystem"],
            path: "Tests/CompositorWatchChild", swiftSettings: strict),
        .testTarget(name: "SensorSystemTests", dependencies: ["SensorSystem", "SensorTestKit"], swiftSettings: strict),
        .testTarget(
            name: "SystemBusTests", dependencies: ["SystemBus", "SensorSystem", "SensorSimulation", "SensorTestKit"],
            swiftSettings: strict),
        // Code written the way Apple's documentation writes SensorKit code, unchanged but for imports.
        .testTarget(name: "SensorKitTests", dependencies: ["SensorKit", "SensorChunks", "SensorTestKit"], swiftSettings: strict),
        .testTarget(
            name: "SensorExportTests",
            dependencies: [
                "SensorExport", "SensorKit", "SensorSimulation", "SensorTestKit", "LocationBridge", "ModemBridge",
            ],
            swiftSettings: strict),
        // The Apple-style study code, one copy run by the source-compatibility and the end-to-end tests.
        .target(name: "AppleStyleStudy", dependencies: ["SensorKit"], path: "Tests/AppleStyleStudy"),
        // The same study code as an app of its own, run by the daemon's end-to-end tests.
        .executableTarget(
            name: "apple-style-study", dependencies: ["AppleStyleStudy", "SensorKit"], path: "Tests/AppleStyleStudyApp"),
        .testTarget(
            name: "AppleSourceCompatibilityTests", dependencies: ["AppleStyleStudy", "SensorKit", "SensorSimulation"]),

        // The BLE bridge's protocol core: ATT/GATT client, HRS/DIS/Battery/PMD codecs, device-clock
        // mapping, the emulated transport (docs/ble.md). Its tests talk to an emulated peripheral
        // that shares no code with it.
        .target(
            name: "BLEBridge", dependencies: ["SensorKitModel", "SensorSystem", "SystemBus", "CBluetooth"], swiftSettings: strict),
        // Emulated wearables (Heart Rate, DIS, Battery, Polar PMD) on the emulated transport, written
        // independently of BLEBridge: the tests' peripheral and `sensorkit-wearable` for the demo rig.
        .target(name: "WearableEmulation", dependencies: ["SensorSystem"], swiftSettings: strict),
        .executableTarget(name: "sensorkit-wearable", dependencies: ["WearableEmulation"], swiftSettings: strict),
        .target(name: "BLETestKit", dependencies: ["WearableEmulation"], path: "Tests/BLETestKit", swiftSettings: strict),
        .testTarget(
            name: "BLEBridgeTests",
            dependencies: [
                "BLEBridge", "BLETestKit", "SensorSimulation", "SensorKitModel", "SensorSystem", "SystemBus", "SensorTestKit",
            ],
            swiftSettings: strict),

        // `make fuzz`: one libFuzzer target per parser (scripts/fuzz.sh builds it with -sanitize=fuzzer);
        // the ordinary build replays inputs through the same parsers.
        .executableTarget(
            name: "sensorkit-fuzz", dependencies: ["SensorKitModel", "IIOBridge", "SensorDaemon"],
            swiftSettings: strict),
    ]
)

import Foundation
import Glibc
import SensorSimulation
import SensorSystem
import SensorTestKit
import Testing

@testable import SensorDaemon

/// What a lab engineer installs (docs/configuration.md, "Installing"): the systemd units, the
/// udev rules and their helper, `scripts/install.sh`'s tree and `scripts/deb.sh`'s package with
/// its maintainer scripts, all checked against the debug build's binaries (no second release build).
@Suite(.serialized) struct PackagingTests {
    static let top = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    /// Runs a command; its exit status and combined output.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String) {
        try CommandOutput.run(arguments, environment: environment)
    }

    static func temporaryFolder() throws -> String {
        var template = Array("/tmp/skpkg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw SystemError("mkdtemp", errno: errno) }
        chmod(made, 0o755)
        return String(cString: made)
    }

    static func unitSettings(_ path: String) throws -> [String: [String]] {
        var settings: [String: [String]] = [:]
        for line in try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        where !line.hasPrefix("#") && line.contains("=") {
            let parts = line.split(separator: "=", maxSplits: 1).map(String.init)
            settings[parts[0], default: []].append(parts.count > 1 ? parts[1] : "")
        }
        return settings
    }

    // MARK: systemd

    @Test(.needs(.tools([("/usr/bin/systemd-analyze", "systemd")])))
    func theUnitsPassSystemdAnalyzeVerify() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let isUnit = { (name: String) in name.hasSuffix(".service") || name.hasSuffix(".socket") || name.hasSuffix(".timer") }
        // The session agent's user unit too (systemd/user): verified in the system manager's mode,
        // as `--user` needs a running user manager's runtime folder, which a build has not.
        let units =
            try FileManager.default.contentsOfDirectory(atPath: Self.top + "/systemd").filter(isUnit).sorted()
            + FileManager.default.contentsOfDirectory(atPath: Self.top + "/systemd/user").filter(isUnit).sorted()
            .map { "user/" + $0 }
        #expect(units.contains("sensorkitd.service") && units.contains("sensorkitd.socket"))
        #expect(units.contains("user/sensorkit-session.service"))
        try FileManager.default.createDirectory(atPath: folder + "/user", withIntermediateDirectories: true)
        // verify insists that ExecStart= exists: point it at this build's binaries.
        for unit in units {
            let text = try String(contentsOfFile: Self.top + "/systemd/" + unit, encoding: .utf8)
                .replacingOccurrences(of: "ExecStart=/usr/bin/", with: "ExecStart=" + DaemonHarness.productsFolder + "/")
            try text.write(toFile: folder + "/" + unit, atomically: true, encoding: .utf8)
        }
        let result = try Self.run(["/usr/bin/systemd-analyze", "verify", "--man=no"] + units.map { folder + "/" + $0 })
        #expect(result.status == 0 && result.output.isEmpty, "\(result.output)")
    }

    /// The user units as `install.sh` lays them out (the participant's with its PYTHONPATH), checked
    /// by a user manager's `verify` (it needs a runtime folder of its own).
    @Test(.timeLimit(.minutes(3)), .needs(.tools([("/usr/bin/systemd-analyze", "systemd"), ("/usr/bin/python3", "python3")])))
    func theUserUnitsPassSystemdAnalyzeVerify() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let installed = try Self.run([Self.top + "/scripts/install.sh", DaemonHarness.productsFolder, folder + "/root", "/usr"])
        #expect(installed.status == 0, "\(installed.output)")
        let userUnits = folder + "/root/usr/lib/systemd/user"
        let units = try FileManager.default.contentsOfDirectory(atPath: userUnits).sorted()
        #expect(units == ["sensorkit-participant.service", "sensorkit-session.service"])
        mkdir(folder + "/runtime", 0o700)
        for unit in units {
            let text = try String(contentsOfFile: userUnits + "/" + unit, encoding: .utf8)
                .replacingOccurrences(
                    of: "ExecStart=/usr/bin/sensorkit-", with: "ExecStart=" + DaemonHarness.productsFolder + "/sensorkit-")
            try text.write(toFile: folder + "/" + unit, atomically: true, encoding: .utf8)
        }
        let result = try Self.run(
            ["/usr/bin/systemd-analyze", "--user", "verify", "--man=no"] + units.map { folder + "/" + $0 },
            environment: ["XDG_RUNTIME_DIR": folder + "/runtime"])
        #expect(result.status == 0 && result.output.isEmpty, "\(result.output)")
    }

    @Test func theUnitsMatchWhatTheDaemonExpects() throws {
        let service = try Self.unitSettings(Self.top + "/systemd/sensorkitd.service")
        let socket = try Self.unitSettings(Self.top + "/systemd/sensorkitd.socket")
        #expect(socket["ListenStream"] == [DaemonPaths.system.socket])
        #expect(socket["FileDescriptorName"] == [SocketActivation.readerName])
        #expect(socket["SocketMode"] == ["0666"], "any local user may connect; the binding decides (docs/protocol.md)")
        #expect(service["Type"] == ["notify"])
        #expect(service["ExecReload"] == ["/bin/kill -HUP $MAINPID"])
        #expect(service["StateDirectory"] == ["sensorkit"], "DaemonPaths.system.stateDirectory is /var/lib/sensorkit")
        #expect(DaemonPaths.system.stateDirectory == "/var/lib/sensorkit")
        #expect(service["RuntimeDirectory"] == ["sensorkit"] && DaemonPaths.system.socket.hasPrefix("/run/sensorkit/"))
        #expect(service["ExecStart"] == ["/usr/bin/sensorkitd"], "the daemon's defaults are the installed paths")
        // BLE goes through bluetoothd by default: no capability, no AF_BLUETOOTH; the hci drop-in adds them.
        #expect(service["CapabilityBoundingSet"] == [""])
        #expect(service["AmbientCapabilities"] == nil)
        #expect(service["RestrictAddressFamilies"] == ["AF_UNIX AF_NETLINK AF_INET AF_INET6"])
        let hci = try Self.unitSettings(Self.top + "/packaging/systemd/hci-transport.conf")
        #expect(hci["CapabilityBoundingSet"] == ["CAP_NET_ADMIN"])
        #expect(hci["AmbientCapabilities"] == ["CAP_NET_ADMIN"])
        #expect(hci["RestrictAddressFamilies"] == ["AF_UNIX AF_BLUETOOTH AF_NETLINK AF_INET AF_INET6"])
        let policy = try String(contentsOfFile: Self.top + "/packaging/dbus/sensorkitd.conf", encoding: .utf8)
        #expect(policy.contains("<policy user=\"\(service["User"]?.first ?? "")\">\n    <allow send_destination=\"org.bluez\"/>"))
        for (key, value) in [
            ("ProtectSystem", "strict"), ("ProtectHome", "yes"), ("PrivateTmp", "yes"), ("NoNewPrivileges", "yes"),
            ("DevicePolicy", "closed"), ("User", "sensorkit"), ("Group", "sensorkit"),
        ] {
            #expect(service[key] == [value], "\(key)")
        }
        #expect(service["DeviceAllow"]?.contains("char-iio rw") == true)
        // Executable bindings read /proc/<peer pid>/exe of other users, the boot id /proc/sys/kernel/random.
        #expect(service["ProtectProc"] == nil && service["ProcSubset"] == nil)
        // It makes /sys read-only, and IIO capture writes there.
        #expect(service["ProtectKernelTunables"] == nil)
        // WATCHDOG_USEC is twice the daemon's ping interval; TimeoutStopSec leaves the store flush its time.
        #expect(service["WatchdogSec"] == ["30s"])
        #expect(service["TimeoutStopSec"] == ["30s"])
    }

    // MARK: udev

    static let matchKeys: Set<String> = [
        "ACTION", "DEVPATH", "KERNEL", "KERNELS", "NAME", "SYMLINK", "SUBSYSTEM", "SUBSYSTEMS",
        "DRIVER", "DRIVERS", "ATTR", "ATTRS", "SYSCTL", "ENV", "CONST", "TAG", "TAGS", "TEST",
        "PROGRAM", "RESULT",
    ]
    static let assignKeys: Set<String> = [
        "NAME", "SYMLINK", "OWNER", "GROUP", "MODE", "SECLABEL", "ATTR", "SYSCTL", "ENV", "TAG",
        "RUN", "LABEL", "GOTO", "IMPORT", "OPTIONS",
    ]

    /// udev(7)'s rule syntax: every line a comma-separated list of KEY[{attr}] OPERATOR "value".
    /// Returns one problem per bad key; labels and GOTOs must pair up.
    static func udevProblems(_ text: String) -> [String] {
        var problems: [String] = []
        var labels: Set<String> = [], gotos: Set<String> = []
        let pattern = /^\s*([A-Z_]+)(\{[^}]+\})?\s*(==|!=|\+=|-=|:=|=)\s*"([^"]*)"\s*$/
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let content = line.trimmingCharacters(in: .whitespaces)
            if content.isEmpty || content.hasPrefix("#") { continue }
            if content.hasSuffix("\\") { problems.append("line \(number + 1): continuation lines are not used here"); continue }
            // Values hold no commas or quotes in these rules, so a plain split is exact.
            for token in content.split(separator: ",") {
                guard let match = String(token).wholeMatch(of: pattern) else {
                    problems.append("line \(number + 1): not KEY OP \"value\": \(token)")
                    continue
                }
                let key = String(match.1), op = String(match.3), value = String(match.4)
                let matching = op == "==" || op == "!="
                guard matching ? matchKeys.contains(key) : assignKeys.contains(key) else {
                    problems.append("line \(number + 1): \(key) cannot take \(op)")
                    continue
                }
                if (key == "LABEL" || key == "GOTO") && op != "=" { problems.append("line \(number + 1): \(key) takes =") }
                if key == "LABEL" { labels.insert(value) }
                if key == "GOTO" { gotos.insert(value) }
                if key == "ENV", let name = match.2, !matching, name.contains("ACCEL_") {
                    problems.append("line \(number + 1): \(key)\(name) would override hwdb")
                }
                if key == "MODE" && !matching && value.wholeMatch(of: /0[0-7]{3}/) == nil {
                    problems.append("line \(number + 1): MODE \(value)")
                }
            }
        }
        for missing in gotos.subtracting(labels) { problems.append("GOTO \"\(missing)\" has no LABEL") }
        return problems
    }

    @Test func theUdevRulesAreValid() throws {
        let rules = try FileManager.default.contentsOfDirectory(atPath: Self.top + "/udev-rules").filter {
            $0.hasSuffix(".rules")
        }
        #expect(rules == ["70-sensorkitd.rules"])
        for name in rules {
            let path = Self.top + "/udev-rules/" + name
            let text = try String(contentsOfFile: path, encoding: .utf8)
            #expect(Self.udevProblems(text) == [], "\(name)")
            #expect(text.contains("TAG+=\"sensorkitd\"") && text.contains("GROUP=\"sensorkit\""))
            // Every RUN program is shipped: /usr/libexec/sensorkitd/X is udev-rules/X.
            for match in text.matches(of: #/RUN\+="/usr/libexec/sensorkitd/([a-z-]+) /#) {
                #expect(FileManager.default.isExecutableFile(atPath: Self.top + "/udev-rules/" + match.1), "\(match.1)")
            }
            let udevadm = ["/usr/bin/udevadm", "/bin/udevadm"].first { FileManager.default.isExecutableFile(atPath: $0) }
            if let udevadm, try Self.run([udevadm, "verify", "--help"]).status == 0 {
                let verified = try Self.run([udevadm, "verify", path])
                #expect(verified.status == 0, "\(verified.output)")
            }
        }
        // The checker itself rejects what udev rejects.
        #expect(Self.udevProblems("KERNEL=\"x\"\n").count == 1, "KERNEL cannot be assigned")
        #expect(Self.udevProblems("GROUP==\"x\"\n").count == 1, "GROUP cannot be matched")
        #expect(Self.udevProblems("FOO=\"x\"\n").count == 1)
        #expect(Self.udevProblems("GROUP=x\n").count == 1)
        #expect(Self.udevProblems("GOTO=\"nowhere\"\n").count == 1)
        #expect(Self.udevProblems("ENV{ACCEL_MOUNT_MATRIX}=\"1, 0, 0; 0, 1, 0; 0, 0, 1\"\n").count >= 1)
    }

    @Test func theRulesHelperOpensExactlyTheAttributesTheDaemonWrites() throws {
        let device = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: device) }
        for folder in ["buffer0", "scan_elements", "trigger"] { mkdir(device + "/" + folder, 0o755) }
        let writable = [
            "buffer0/enable", "buffer0/length", "buffer0/watermark", "scan_elements/in_accel_x_en",
            "scan_elements/in_timestamp_en", "sampling_frequency", "in_accel_sampling_frequency",
            "current_timestamp_clock", "trigger/current_trigger", "in_steps_en",
        ]
        let untouched = ["name", "in_accel_x_raw", "scan_elements/in_accel_x_type", "buffer0/data_available"]
        for file in writable + untouched {
            #expect(FileManager.default.createFile(atPath: device + "/" + file, contents: Data("0\n".utf8)))
            chmod(device + "/" + file, 0o644)
        }
        chmod(device + "/sampling_frequency", 0o444)  // a driver whose rate is fixed: stays read-only
        symlink("/etc/hostname", device + "/scan_elements/in_anglvel_x_en")
        let nogroup = try #require(getgrnam("nogroup")).pointee.gr_gid
        let result = try Self.run(["/bin/sh", Self.top + "/udev-rules/iio-access", device, "nogroup"])
        #expect(result.status == 0, "\(result.output)")
        func owner(_ file: String) -> (gid: gid_t, mode: mode_t) {
            var info = stat()
            lstat(device + "/" + file, &info)
            return (info.st_gid, info.st_mode & 0o777)
        }
        for file in writable {
            #expect(owner(file).gid == nogroup, "\(file)")
            #expect(owner(file).mode == (file == "sampling_frequency" ? 0o444 : 0o664), "\(file)")
        }
        for file in untouched { #expect(owner(file).gid == 0 && owner(file).mode == 0o644, "\(file)") }
        var info = stat()
        stat("/etc/hostname", &info)
        #expect(info.st_gid == 0, "a link is not followed")
    }

    // MARK: make install, make deb

    /// What GeoClue must hold for the session agent (`LocationFeed.desktopID`): allowed, not a
    /// system component, for every user.
    static let agentPermission = ["sensorkit-session": ["allowed": "true", "system": "false", "users": ""]]

    /// A GeoClue configuration's sections (GKeyFile: `[group]`, `key=value`, `#` comments).
    static func geoclueSections(_ text: String) -> [String: [String: String]] {
        var sections: [String: [String: String]] = [:]
        var current: String?
        for line in text.split(separator: "\n").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            if line.isEmpty || line.hasPrefix("#") { continue }
            if line.hasPrefix("[") && line.hasSuffix("]") {
                current = String(line.dropFirst().dropLast())
                sections[current!, default: [:]] = sections[current!] ?? [:]
            } else if let current, let equals = line.firstIndex(of: "=") {
                sections[current, default: [:]][String(line[..<equals])] = String(line[line.index(after: equals)...])
            }
        }
        return sections
    }

    /// `scripts/install.sh` with this build's binaries: the layout, the default configuration
    /// generated from docs/configuration.md, the example app, the --help texts.
    @Test(.timeLimit(.minutes(3))) func installLaysOutEverythingAndTheDefaultConfigurationIsTheDaemonsDefault() throws {
        let destination = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let result = try Self.run([Self.top + "/scripts/install.sh", DaemonHarness.productsFolder, destination, "/usr"])
        #expect(result.status == 0, "\(result.output)")
        let files = FileManager.default
        for binary in ["usr/bin/sensorkitd", "usr/bin/sensorkitctl", "usr/libexec/sensorkitd/iio-access"] {
            #expect(files.isExecutableFile(atPath: destination + "/" + binary), "\(binary)")
        }
        for file in [
            "usr/lib/systemd/system/sensorkitd.service", "usr/lib/systemd/system/sensorkitd.socket",
            "usr/lib/udev/rules.d/70-sensorkitd.rules", "etc/sensorkit/sensorkitd.conf",
            "usr/share/doc/sensorkitd/sensorkitctl.help.txt", "usr/share/doc/sensorkitd/configuration.md",
            "usr/share/dbus-1/system.d/sensorkitd.conf", "usr/share/doc/sensorkitd/hci-transport.conf",
            "etc/geoclue/conf.d/90-sensorkit-session.conf",
            "usr/lib/systemd/user/sensorkit-session.service",
        ] {
            #expect(files.fileExists(atPath: destination + "/" + file), "\(file)")
        }
        // GeoClue lets the session agent's desktop id ask for location without an agent's prompt.
        let geoclue = try String(
            contentsOfFile: destination + "/etc/geoclue/conf.d/90-sensorkit-session.conf", encoding: .utf8)
        #expect(Self.geoclueSections(geoclue) == Self.agentPermission, "\(geoclue)")
        #expect(
            !files.fileExists(atPath: destination + "/usr/bin/sensorkit-bench")
                && !files.fileExists(atPath: destination + "/usr/bin/sensorkit-fuzz"))
        #expect(
            try String(contentsOfFile: destination + "/usr/share/doc/sensorkitd/sensorkitd.help.txt", encoding: .utf8)
                == DaemonCommand.help + "\n")

        // As installed, every setting is commented out: the daemon's defaults. Uncommented, every
        // documented example parses, so docs/configuration.md cannot show a setting the parser refuses.
        let conf = try String(contentsOfFile: destination + "/etc/sensorkit/sensorkitd.conf", encoding: .utf8)
        #expect(try DaemonCommand.loadConfiguration(destination + "/etc/sensorkit/sensorkitd.conf") == DaemonConfiguration())
        let documented = try String(contentsOfFile: Self.top + "/docs/configuration.md", encoding: .utf8)
        for key in [
            "hold", "window", "max-bytes", "min-free", "sensors", "enabled", "ignore", "remote", "max-connections",
            "fetch-idle-timeout",
        ] {
            #expect(conf.contains("\n#\(key) = ") && documented.contains("\n\(key) = "), "\(key)")
        }
        let uncommented = conf.split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("#") && !$0.hasPrefix("# ") && $0 != "#" ? String($0.dropFirst()) : String($0) }
            .joined(separator: "\n")
        #expect(throws: Never.self) { _ = try DaemonConfiguration.parse(uncommented) }

        // The example app is inert where it lies (a dot folder) and a valid manifest once copied.
        let apps = destination + "/etc/sensorkit/apps.d"
        #expect(AppRegistry.load(directory: apps).registry.apps.isEmpty)
        let example = try AppManifest.load(directory: apps + "/.example/com.example.study", resolveUser: { _ in 4242 })
        #expect(example.bundleID == "com.example.study")
    }

    /// The participant's application as `install.sh` ships it under /usr/local: every module of the
    /// Python package and the wire client, the app-grid entry and the watcher's user unit, both
    /// running Debian's python3 on this prefix's copy, which imports from there (not from the
    /// source tree) with GTK 4 and libadwaita.
    @Test(.timeLimit(.minutes(3))) func installShipsTheParticipantAppAtItsPrefix() throws {
        let destination = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: destination) }
        let result = try Self.run([Self.top + "/scripts/install.sh", DaemonHarness.productsFolder, destination, "/usr/local"])
        #expect(result.status == 0, "\(result.output)")
        let pythonPath = "/usr/local/lib/python3/dist-packages"
        let source = Self.top + "/clients/python"
        let modules = try #require(FileManager.default.subpaths(atPath: source + "/sensorkit")).filter {
            $0.hasSuffix(".py") && !$0.contains("__pycache__")
        }
        #expect(modules.contains("participant/app.py") && modules.contains("participant/panel.py"))
        for module in modules.map({ "sensorkit/" + $0 }) + ["sensorkit_client.py"] {
            let installed = FileManager.default.contents(atPath: destination + pythonPath + "/" + module)
            #expect(installed != nil && installed == FileManager.default.contents(atPath: source + "/" + module), "\(module)")
        }
        let unit = try Self.unitSettings(destination + "/usr/local/lib/systemd/user/sensorkit-participant.service")
        #expect(unit["Environment"] == ["PYTHONPATH=" + pythonPath])
        #expect(unit["ExecStart"] == ["/usr/bin/python3 -m sensorkit.participant --watch"])
        #expect(unit["WantedBy"] == ["graphical-session.target"] && unit["PartOf"] == ["graphical-session.target"])
        let entry = try Self.unitSettings(destination + "/usr/local/share/applications/org.sensorkit.Participant.desktop")
        #expect(entry["Exec"] == ["env PYTHONPATH=\(pythonPath) /usr/bin/python3 -m sensorkit.participant"])
        #expect(entry["Type"] == ["Application"] && entry["Name"] == ["Research Sensor & Usage Data"])
        let imported = try Self.run(
            [
                "/usr/bin/env", "-C", "/", "-u", "DISPLAY", "-u", "WAYLAND_DISPLAY", "PYTHONPATH=" + destination + pythonPath,
                "/usr/bin/python3", "-c",
                "import sensorkit.participant.app as app, sensorkit_client as client; print(app.__file__); print(client.__file__)",
            ])
        #expect(imported.status == 0, "\(imported.output)")
        let files = imported.output.split(separator: "\n").map(String.init)
        #expect(files.count == 2 && files.allSatisfy { $0.hasPrefix(destination + pythonPath + "/") }, "\(imported.output)")
    }

    /// `scripts/deb.sh` on this build's binaries, then the package installed into and purged from a
    /// scratch root with dpkg, its maintainer scripts running for real (chrootless, DPKG_ROOT).
    @Test(.timeLimit(.minutes(3)), .needs(.root("dpkg --root with maintainer scripts")))
    func thePackageInstallsCreatesItsUserEnablesItsUnitsAndPurges() throws {
        let work = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: work) }
        let built = try Self.run(
            [Self.top + "/scripts/deb.sh", DaemonHarness.productsFolder, work + "/out"],
            environment: ["SENSORKIT_DEB_UNPACKAGED": "skip", "SENSORKIT_DEB_COMPRESSION": "none"])
        #expect(built.status == 0, "\(built.output)")
        let deb = try #require(built.output.split(separator: "\n").last.map(String.init), "\(built.output)")
        let depends = try Self.run(["/usr/bin/dpkg-deb", "-f", deb, "Depends"]).output
        for package in ["libc6 (", "libsqlite3-0 (", "libudev1 (", "libiio0 (", "libzstd1 (", "passwd"] {
            #expect(depends.contains(package), "Depends: \(depends)")
        }
        // What the participant's application imports (PyGObject, GTK 4, libadwaita, cairo for its bars).
        let recommends = try Self.run(["/usr/bin/dpkg-deb", "-f", deb, "Recommends"]).output
            .split(separator: ",").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        for package in ["python3", "python3-gi", "python3-gi-cairo", "gir1.2-gtk-4.0", "gir1.2-adw-1"] {
            #expect(recommends.contains(package), "Recommends: \(recommends)")
        }

        // A scratch root with the account files useradd edits in place.
        let root = work + "/root"
        for folder in ["var/lib/dpkg/info", "var/lib/dpkg/updates", "etc"] {
            try FileManager.default.createDirectory(atPath: root + "/" + folder, withIntermediateDirectories: true)
        }
        try "".write(toFile: root + "/var/lib/dpkg/status", atomically: true, encoding: .utf8)
        try "root:x:0:0:root:/root:/bin/sh\n".write(toFile: root + "/etc/passwd", atomically: true, encoding: .utf8)
        try "root:x:0:\n".write(toFile: root + "/etc/group", atomically: true, encoding: .utf8)
        try "root:*:19000:0:99999:7:::\n".write(toFile: root + "/etc/shadow", atomically: true, encoding: .utf8)
        try "root:*::\n".write(toFile: root + "/etc/gshadow", atomically: true, encoding: .utf8)
        let dpkg = ["/usr/bin/dpkg", "--root=" + root, "--force-script-chrootless", "--force-depends", "--log=/dev/null"]
        // GeoClue 2.6's only configuration file, as Debian 12 ships it (in part).
        let geoclueConf = root + "/etc/geoclue/geoclue.conf"
        let geoclueAsShipped =
            "[agent]\nwhitelist=geoclue-demo-agent;gnome-shell\n\n[firefox]\nallowed=true\nsystem=false\nusers=\n"
        try FileManager.default.createDirectory(atPath: root + "/etc/geoclue", withIntermediateDirectories: true)
        try geoclueAsShipped.write(toFile: geoclueConf, atomically: true, encoding: .utf8)
        let installed = try Self.run(dpkg + ["-i", deb])
        #expect(installed.status == 0, "\(installed.output)")
        // The agent's permission, in GeoClue 2.7's drop-in folder and in 2.6's file.
        let conffilesList = try String(contentsOfFile: root + "/var/lib/dpkg/info/sensorkitd.conffiles", encoding: .utf8)
        #expect(conffilesList.contains("/etc/geoclue/conf.d/90-sensorkit-session.conf"))
        let geoclueInstalled = try String(contentsOfFile: geoclueConf, encoding: .utf8)
        #expect(geoclueInstalled.hasPrefix(geoclueAsShipped))
        #expect(Self.geoclueSections(geoclueInstalled)["sensorkit-session"] == Self.agentPermission["sensorkit-session"])
        let passwd = try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8)
        #expect(passwd.contains("\nsensorkit:x:") && passwd.contains(":/var/lib/sensorkit:/usr/sbin/nologin"), "\(passwd)")
        #expect(try String(contentsOfFile: root + "/etc/group", encoding: .utf8).contains("\nsensorkit:x:"))
        for link in ["sockets.target.wants/sensorkitd.socket", "multi-user.target.wants/sensorkitd.service"] {
            // The link is absolute, into the image: read it, do not follow it on this machine.
            let target = try? FileManager.default.destinationOfSymbolicLink(atPath: root + "/etc/systemd/system/" + link)
            #expect(
                target == "/usr/lib/systemd/system/" + link.split(separator: "/").last!, "enabled: \(link)\n\(installed.output)")
        }
        // The session agent and the participant's watcher, enabled for every graphical session.
        for unit in ["sensorkit-session.service", "sensorkit-participant.service"] {
            let target = try? FileManager.default.destinationOfSymbolicLink(
                atPath: root + "/etc/systemd/user/graphical-session.target.wants/" + unit)
            #expect(target == "/usr/lib/systemd/user/" + unit, "enabled: \(unit)\n\(installed.output)")
        }
        for file in [
            "usr/lib/python3/dist-packages/sensorkit/participant/app.py", "usr/lib/python3/dist-packages/sensorkit_client.py",
            "usr/share/applications/org.sensorkit.Participant.desktop",
        ] {
            #expect(FileManager.default.fileExists(atPath: root + "/" + file), "\(file)")
        }
        #expect(FileManager.default.fileExists(atPath: root + "/usr/lib/systemd/user/sensorkit-session.service"))
        #expect(FileManager.default.isExecutableFile(atPath: root + "/usr/bin/sensorkitd"))
        #expect(FileManager.default.fileExists(atPath: root + "/usr/lib/udev/rules.d/70-sensorkitd.rules"))
        let conffiles = try String(contentsOfFile: root + "/var/lib/dpkg/info/sensorkitd.conffiles", encoding: .utf8)
        #expect(conffiles.contains("/etc/sensorkit/sensorkitd.conf"))

        // Installing again (an upgrade) keeps one user, and one GeoClue section.
        #expect(try Self.run(dpkg + ["-i", deb]).status == 0)
        #expect(try String(contentsOfFile: geoclueConf, encoding: .utf8) == geoclueInstalled)
        #expect(
            try String(contentsOfFile: root + "/etc/passwd", encoding: .utf8).components(separatedBy: "\nsensorkit:").count == 2)

        // Purge: files, unit links and the store go; the user stays (files it owned may remain elsewhere).
        try FileManager.default.createDirectory(atPath: root + "/var/lib/sensorkit", withIntermediateDirectories: true)
        let purged = try Self.run(dpkg + ["--purge", "sensorkitd"])
        #expect(purged.status == 0, "\(purged.output)")
        #expect(try String(contentsOfFile: geoclueConf, encoding: .utf8) == geoclueAsShipped, "GeoClue's file as it was")
        for gone in [
            "usr/bin/sensorkitd", "etc/sensorkit/sensorkitd.conf", "etc/systemd/system/sockets.target.wants/sensorkitd.socket",
            "var/lib/sensorkit", "etc/geoclue/conf.d/90-sensorkit-session.conf",
            "etc/systemd/user/graphical-session.target.wants/sensorkit-participant.service",
            "usr/lib/python3/dist-packages/sensorkit/participant/app.py",
            "usr/share/applications/org.sensorkit.Participant.desktop",
            "etc/systemd/user/graphical-session.target.wants/sensorkit-session.service",
        ] {
            var info = stat()
            #expect(lstat(root + "/" + gone, &info) != 0, "\(gone)")
        }
    }
}

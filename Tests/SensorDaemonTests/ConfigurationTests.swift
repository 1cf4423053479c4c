import Foundation
import Glibc
import SensorKitModel
import SensorSystem
import SensorTestKit
import Testing

@testable import SensorDaemon

@Suite struct ConfigurationTests {
    @Test func parsesEverySection() throws {
        let config = try DaemonConfiguration.parse(
            """
            # lab rig
            profile = lab
            [store]
            window = 3d
            max-bytes = 20G
            min-free = 512M
            [sensor accelerometer]
            hold = 2h   # trailing comment
            [grant com.example.rig]
            sensors = accelerometer, rotationRate
            [iio]
            enabled = no
            ignore = iio:device3
            """)
        #expect(config.profile == .lab)
        #expect(config.defaultRetention == .init(hold: 0, window: 3 * 86_400_000_000_000))
        #expect(config.retention(for: .accelerometer).hold == 2 * 3_600_000_000_000)
        #expect(config.retention(for: .accelerometer).window == 3 * 86_400_000_000_000)
        #expect(config.maxStoreBytes == 20 << 30)
        #expect(config.minFreeBytes == 512 << 20)
        #expect(
            config.grants == [
                .init(app: "com.example.rig", sensor: .accelerometer), .init(app: "com.example.rig", sensor: .rotationRate),
            ])
        #expect(config.ignoredDevices == ["iio:device3"])
        #expect(!config.iioEnabled)
    }

    @Test func aSensorRateIsParsedInHertzAndNonsenseIsRefused() throws {
        let config = try DaemonConfiguration.parse(
            """
            [sensor accelerometer]
            rate = 100
            [sensor ambientLightSensor]
            rate = 2.5 Hz
            """)
        #expect(config.sensorRates == [.accelerometer: 100, .ambientLightSensor: 2.5])
        for bad in ["0", "-5", "nan", "inf", "fast", "1e9"] {
            #expect(throws: DaemonConfiguration.ParseError.self) {
                try DaemonConfiguration.parse("[sensor accelerometer]\nrate = \(bad)")
            }
        }
    }

    @Test func defaultsAreSensorKits() throws {
        let config = try DaemonConfiguration.parse("")
        #expect(config.defaultRetention.hold == 86_400_000_000_000)
        #expect(config.defaultRetention.window == 7 * 86_400_000_000_000)
    }

    @Test func mistakesNameTheirLine() {
        for (text, line) in [
            ("holdd = 1h", 1), ("[store]\nhold = soon", 2), ("[sensor nonsense]", 1),
            ("[grant x]\nsensors = teleporter", 2), ("[mystery]", 1), ("profile = fast", 1), ("[store", 1),
            ("[store]\nwindow = 0", 2),
        ] {
            #expect(throws: DaemonConfiguration.ParseError.self) { try DaemonConfiguration.parse(text) }
            do { _ = try DaemonConfiguration.parse(text) } catch { #expect(error.line == line) }
        }
    }

    /// A second `hold =` silently overriding the first would change a study's rules behind the
    /// back of whoever reads the first; so would a second `[grant]` of the same app.
    @Test(
        arguments: [
            ("[store]\nhold = 24h\nwindow = 7d\nhold = 0\n", 4, "hold is set twice in [store] (first on line 2); keep one"),
            ("profile = lab\nprofile = study\n", 2, "profile is set twice (first on line 1); keep one"),
            (
                "[store]\nhold = 1h\n[sensor accelerometer]\nhold = 0\n[store]\nwindow = 3d\n", 5,
                "section [store] appears twice (first on line 1); merge the two into one"
            ),
            (
                "[grant com.example.a]\nsensors = accelerometer\n[grant  com.example.a ]\nsensors = rotationRate\n", 3,
                "section [grant com.example.a] appears twice (first on line 1); merge the two into one"
            ),
            ("[iio]\nignore = a\n\n# later\nignore = b\n", 5, "ignore is set twice in [iio] (first on line 2); keep one"),
        ] as [(String, Int, String)])
    func duplicateKeysAndSectionsAreErrorsNamingBothLines(text: String, line: Int, message: String) throws {
        do {
            _ = try DaemonConfiguration.parse(text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.line == line && error.message == message, "\(error)")
        }
        // The same key in two sections, and the same sensor's two sections, are not repeats.
        let config = try DaemonConfiguration.parse(
            "[sensor accelerometer]\nhold = 0\n[sensor rotationRate]\nhold = 0\n[store]\nhold = 1h\n")
        #expect(config.sensorRetention.count == 2)
    }

    @Test func durationsAndSizes() {
        #expect(DaemonConfiguration.parseDuration("250ms") == 250_000_000)
        #expect(DaemonConfiguration.parseDuration("90s") == 90_000_000_000)
        #expect(DaemonConfiguration.parseDuration("-1s") == nil)
        #expect(DaemonConfiguration.parseDuration("99999999999d") == nil)
        #expect(DaemonConfiguration.parseSize("4096") == 4096)
        #expect(DaemonConfiguration.parseSize("2T") == 2 << 40)
        #expect(DaemonConfiguration.parseSize("lots") == nil)
    }

    /// A configuration file in a fresh folder; the caller removes the folder.
    private func configFile(_ text: String, mode: mode_t = 0o644) throws -> String {
        let folder = try ManifestFixture.temporaryFolder()
        let path = folder + "/sensorkitd.conf"
        #expect(FileManager.default.createFile(atPath: path, contents: Data(text.utf8)))
        chmod(path, mode)
        return path
    }

    @Test func aMissingFileMeansTheDefaultsAndAPresentOneIsRead() throws {
        let path = try configFile("profile = lab\n")
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        #expect(try DaemonCommand.loadConfiguration(path).profile == .lab)
        #expect(try DaemonCommand.loadConfiguration(path + ".missing") == DaemonConfiguration())
    }

    @Test func aFileOverTheBoundIsRefusedNotCut() throws {
        // Cut at the bound, the file's last line would have been parsed half, or not at all.
        let padding = String(repeating: "# padding\n", count: DaemonCommand.maximumConfigurationBytes / 10)
        let path = try configFile(padding + "profile = lab\n")
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        #expect(throws: FileRefusal.tooLarge(path, limit: DaemonCommand.maximumConfigurationBytes)) {
            try DaemonCommand.loadConfiguration(path)
        }
    }

    @Test func aFileOthersCanWriteIsRefused() throws {
        // Its [grant] sections skip the consent prompt.
        let path = try configFile("[grant com.example.rig]\nsensors = accelerometer\n", mode: 0o664)
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        #expect(throws: FileRefusal.writableByOthers(path, mode: 0o100664)) { try DaemonCommand.loadConfiguration(path) }
    }

    @Test(.needs(.root("chown to another user")))
    func aFileAnotherUserOwnsIsRefused() throws {
        let path = try configFile("[grant com.example.rig]\nsensors = accelerometer\n")
        defer { try? FileManager.default.removeItem(atPath: (path as NSString).deletingLastPathComponent) }
        #expect(chown(path, 65534, 65534) == 0)
        #expect(throws: FileRefusal.ownedByAnotherUser(path, uid: 65534)) { try DaemonCommand.loadConfiguration(path) }
    }
    @Test func readerLimitsComeFromTheConfigOrTheOpenFileLimit() throws {
        let config = try DaemonConfiguration.parse(
            "[reader]\nmax-connections = 500\nmax-connections-per-user = 20\nmax-fetches = 40\nmax-fetches-per-user = 5\nfetch-idle-timeout = 2m\n"
        )
        let set = ReaderLimits(config.reader, openFiles: 1024)
        #expect(set.maxConnections == 500 && set.maxConnectionsPerUser == 20 && set.fetchIdleTimeout == 120_000_000_000)
        #expect(set.maxFetches == 40 && set.maxFetchesPerUser == 5)
        // LimitNOFILE=1024: 128 descriptors kept for recording, a quarter of the rest for the
        // store's readers (so fetches), the others for connections; an eighth of each per user.
        let derived = ReaderLimits(.init(), openFiles: 1024)
        #expect(
            derived.maxConnections == 672 && derived.maxConnectionsPerUser == 84 && derived.fetchIdleTimeout == 60_000_000_000)
        #expect(derived.maxFetches == 108 && derived.maxFetchesPerUser == 13)
        #expect(ReaderLimits(.init(), openFiles: 64).maxConnections == 8)
        #expect(ReaderLimits(.init(), openFiles: 1 << 20).maxConnections == 4096)
        #expect(ReaderLimits(.init(), openFiles: nil).maxConnections == 4096)
        for bad in [
            "max-connections = 0", "max-connections-per-user = -3", "max-connections = lots", "fetch-idle-timeout = 0",
            "max-fetches = 0", "max-fetches-per-user = many",
        ] {
            #expect(throws: DaemonConfiguration.ParseError.self) { try DaemonConfiguration.parse("[reader]\n" + bad) }
        }
    }
}

import BLEBridge
import SensorKitModel
import Testing

@testable import SensorDaemon

/// `[ble]` and `[wearable NAME]` (docs/configuration.md): what parses, and a line-numbered error
/// for everything else.
@Suite struct BLEConfigurationTests {
    @Test func parsesTransportAndWearables() throws {
        let config = try DaemonConfiguration.parse(
            """
            [ble]
            transport = emulated:/run/sensorkit/emulated-ble
            [wearable chest strap]
            address = c0:ff:ee:00:00:01
            streams = heartRate, electrocardiogram, heartRate
            [wearable arm]
            name = Polar Sense *   # the advertised name
            streams = photoplethysmogram, onWristState
            """)
        #expect(config.ble == BLESettings(transport: .emulated(directory: "/run/sensorkit/emulated-ble")))
        #expect(config.wearables.map(\.name) == ["chest strap", "arm"])
        #expect(config.wearables[0].match == .address("C0:FF:EE:00:00:01"))
        #expect(config.wearables[0].streams == [.heartRate, .electrocardiogram])
        #expect(config.wearables[1].match == .name("Polar Sense *"))
        #expect(config.wearables[1].matches(address: "AA:BB:CC:DD:EE:FF", advertisedName: "Polar Sense 1A2B3C4D"))
        #expect(!config.wearables[1].matches(address: "AA:BB:CC:DD:EE:FF", advertisedName: "Polar H10 1A2B3C4D"))
        #expect(config.wearables[0].matches(address: "c0:ff:ee:00:00:01", advertisedName: nil))
        #expect(try DaemonConfiguration.parse("[ble]\n").ble == BLESettings(transport: .automatic(adapter: "hci0")))
        #expect(
            try DaemonConfiguration.parse("[ble]\ntransport = bluez\n").ble == BLESettings(transport: .bluez(adapter: "hci0")))
        #expect(try DaemonConfiguration.parse("").ble == nil)
    }

    /// The lab profile hands each PMD frame over on receipt once its clock is checked, for live
    /// subscribers (docs/live.md); the study profile keeps the second a frame waits for the fit.
    @Test func theProfileSetsHowLongPMDFramesWaitForTheirClockFit() throws {
        let sections =
            "[ble]\ntransport = emulated:/tmp/ble\n[wearable chest]\naddress = c0:ff:ee:00:00:10\nstreams = electrocardiogram\n"
        for (profile, hold) in [("lab", PMDStreamTimeline.Hold.onReceipt), ("study", .fit)] {
            let driver = BLEDriver(configuration: try DaemonConfiguration.parse("profile = \(profile)\n" + sections))
            #expect(driver?.wearables.map(\.frameHold) == [hold], "profile = \(profile)")
        }
        #expect(PMDStreamTimeline.Hold.onReceipt.verified == 0)
        #expect(PMDStreamTimeline.Hold.onReceipt.unverified == PMDStreamTimeline.Hold.fit.unverified)
    }

    @Test(
        arguments: [
            (
                "[ble]\ntransport = radio\n", 2,
                "transport: 'radio' must be bluez, hci, hci-socket:/absolute/path or emulated:/absolute/folder"
            ),
            (
                "[ble]\ntransport = emulated:relative\n", 2,
                "transport: 'emulated:relative' must be bluez, hci, hci-socket:/absolute/path or emulated:/absolute/folder"
            ),
            ("[ble x]\n", 1, "[ble] takes no name"),
            ("[wearable]\n", 1, "[wearable] needs a name, e.g. [wearable chest-strap]"),
            (
                "[ble]\n[wearable a]\naddress = C0:FF:EE:00:00\nstreams = heartRate\n", 3,
                "address: 'C0:FF:EE:00:00' is not a Bluetooth address like C0:FF:EE:00:00:01"
            ),
            (
                "[ble]\n[wearable a]\naddress = C0:FF:EE:00:00:01\nname = x\n", 4,
                "[wearable a] takes one address = or name =, not both"
            ),
            (
                "[ble]\n[wearable a]\nname = Polar [H10\n", 3,
                "name: 'Polar [H10' is not a shell pattern (an unclosed [ or a trailing \\)"
            ),
            (
                "[ble]\n[wearable a]\nname = x\nstreams = heartRate, rotationRate\n", 4,
                "streams: 'rotationRate' is not a wearable stream; use heartRate, onWristState, electrocardiogram, photoplethysmogram, accelerometer"
            ),
            ("[ble]\n[wearable a]\nstreams = heartRate\n", 2, "[wearable a] needs address = or name ="),
            (
                "[ble]\n[wearable a]\nname = x\n", 2,
                "[wearable a] needs streams = (heartRate, onWristState, electrocardiogram, photoplethysmogram, accelerometer)"
            ),
            (
                "[wearable a]\nname = x\nstreams = heartRate\n", 1,
                "[wearable a] needs a [ble] section (transport = bluez, hci or emulated:/folder)"
            ),
            (
                "[ble]\n[wearable a]\nname = x\nstreams = heartRate\n[wearable a]\n", 5,
                "section [wearable a] appears twice (first on line 2); merge the two into one"
            ),
            (
                "[ble]\n[wearable a]\naddress = C0:FF:EE:00:00:01\nstreams = heartRate\n[wearable b]\naddress = c0:ff:ee:00:00:01\nstreams = heartRate\n",
                5,
                "[wearable b] has the address of [wearable a]"
            ),
            ("[ble]\n[wearable a]\nname = x\nstreams = heartRate\nrssi = -40\n", 5, "unknown key 'rssi' in [wearable a]"),
        ] as [(String, Int, String)])
    func refusesBadInputWithItsLine(text: String, line: Int, message: String) {
        do {
            _ = try DaemonConfiguration.parse(text)
            Issue.record("parsed: \(text)")
        } catch {
            #expect(error.line == line && error.message == message, "\(error)")
        }
    }

    @Test func shellPatterns() {
        #expect(ShellPattern.matches("Polar H10 *", "Polar H10 0A0B0C0D"))
        #expect(!ShellPattern.matches("Polar H10 *", "Polar H9 0A0B0C0D"))
        #expect(ShellPattern.matches("*Sense*", "Polar Sense 1A2B"))
        #expect(ShellPattern.matches("HR?", "HR1"))
        #expect(!ShellPattern.matches("HR?", "HR"))
        #expect(ShellPattern.matches("H[0-9]0", "H10"))
        #expect(!ShellPattern.matches("H[!0-9]0", "H10"))
        #expect(ShellPattern.matches("a\\*", "a*"))
        #expect(!ShellPattern.matches("a\\*", "ab"))
        #expect(ShellPattern.matches("*", ""))
        #expect(!ShellPattern.isValid("[abc"))
        #expect(!ShellPattern.isValid("abc\\"))
        #expect(ShellPattern.isValid("[]x]"))
    }
}

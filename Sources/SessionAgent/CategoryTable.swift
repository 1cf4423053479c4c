import SensorKitModel

/// freedesktop menu categories → SensorKit's category keys (docs/device-usage.md, "Categories").
/// Apple files an app under the primary genre of its store listing; a desktop entry lists menu
/// categories, main ones (`Office`, `Graphics`) and additional ones (`Spreadsheet`, `Maps`). The
/// first additional category the table knows decides, in the entry's order; failing that the
/// first main one; failing that `miscellaneous`. Keys with no freedesktop counterpart (weather,
/// travel, lifestyle, health and fitness, food and drink, shopping, catalogs, newsstand,
/// stickers, business) are never produced.
public enum CategoryTable {
    typealias Key = SRDeviceUsageReport.CategoryKey

    static let main: [String: Key] = [
        "AudioVideo": .entertainment, "Audio": .music, "Video": .entertainment, "Development": .developerTools,
        "Education": .education, "Game": .games, "Graphics": .graphicsAndDesign, "Network": .utilities,
        "Office": .productivity, "Science": .education, "Settings": .utilities, "System": .utilities, "Utility": .utilities,
    ]

    static let additional: [String: Key] = {
        var table: [String: Key] = ["KidsGame": .kids, "SportsGame": .games, "Sports": .sports]
        for game in [
            "ActionGame", "AdventureGame", "ArcadeGame", "BoardGame", "BlocksGame", "CardGame", "LogicGame", "Simulation",
            "RolePlaying", "Shooter", "StrategyGame", "Emulator",
        ] { table[game] = .games }
        let rows: [(Key, [String])] = [
            (.socialNetworking, ["InstantMessaging", "Chat", "IRCClient", "VideoConference", "Telephony"]),
            (
                .productivity,
                [
                    "Email", "Calendar", "ContactManagement", "WordProcessor", "Spreadsheet", "Presentation",
                    "ProjectManagement", "TextEditor", "Chart", "FlowChart", "PDA",
                ]
            ),
            (.finance, ["Finance"]),
            (.news, ["News", "Feed"]),
            (.navigation, ["Maps"]),
            (.reference, ["Dictionary", "Documentation", "Geography", "History", "Literature"]),
            (.photoAndVideo, ["Photography", "RasterGraphics", "Scanning", "OCR", "AudioVideoEditing", "Recorder"]),
            (.graphicsAndDesign, ["2DGraphics", "VectorGraphics", "3DGraphics", "Publishing"]),
            (.music, ["Music", "Midi", "Mixer", "Sequencer", "Tuner"]),
            (.entertainment, ["TV", "Player", "Amusement"]),
            (
                .developerTools,
                [
                    "IDE", "Debugger", "RevisionControl", "Building", "Profiling", "GUIDesigner", "WebDevelopment",
                    "TerminalEmulator", "Translation",
                ]
            ),
            (
                .education,
                [
                    "Languages", "Math", "Astronomy", "Biology", "Chemistry", "Physics", "ComputerScience",
                    "DataVisualization", "Economy", "Electricity", "Geology", "Geoscience", "NumericalAnalysis",
                    "ArtificialIntelligence", "Construction", "Engineering", "Electronics", "Art",
                ]
            ),
            (.medical, ["MedicalSoftware"]),
            (
                .utilities,
                [
                    "WebBrowser", "FileManager", "Archiving", "Compression", "Calculator", "Clock", "Accessibility",
                    "TextTools", "Filesystem", "Monitor", "Security", "DesktopSettings", "HardwareSettings", "Printing",
                    "PackageManager", "FileTransfer", "P2P", "RemoteAccess", "Dialup",
                ]
            ),
        ]
        for (key, names) in rows { for name in names { table[name] = key } }
        return table
    }()

    /// The key of an entry with these categories (in file order).
    public static func key(_ categories: [String]) -> SRDeviceUsageReport.CategoryKey {
        categories.lazy.compactMap { additional[$0] }.first ?? categories.lazy.compactMap { main[$0] }.first
            ?? .miscellaneous
    }
}

import Testing

@testable import SystemBus

/// Values from the bus are hostile: typed reading refuses wrong types, duplicate keys and
/// malformed containers; values built by a caller are checked before they are sent.
@Suite struct DBusValueTests {
    static func properties(_ pairs: [(String, DBusValue)]) -> DBusValue {
        .dictionary(key: .string, value: .variant, pairs.map { DBusDictionaryEntry(.string($0.0), .variant($0.1)) })
    }

    @Test func typedReadingRefusesOtherTypes() throws {
        #expect(try DBusValue.string("x").as(String.self) == "x")
        #expect(try DBusValue.uint32(7).as(UInt32.self) == 7)
        #expect(throws: DBusError.malformed("expected s, got i")) { try DBusValue.int32(1).as(String.self) }
        #expect(throws: DBusError.malformed("expected u, got v")) { try DBusValue.variant(.uint32(1)).as(UInt32.self) }
        #expect(try DBusValue.array(.string, [.string("a"), .string("b")]).as([String].self) == ["a", "b"])
        #expect(throws: DBusError.self) { try DBusValue.array(.string, [.string("a"), .int32(1)]).as([String].self) }
        #expect(throws: DBusError.self) { try DBusValue.string("a").as([String].self) }
    }

    @Test func propertyDictionariesUnwrapVariantsAndRefuseDuplicates() throws {
        let good = Self.properties([("Name", .string("H10")), ("RSSI", .int16(-60))])
        #expect(try good.properties() == ["Name": .string("H10"), "RSSI": .int16(-60)])
        let twice = Self.properties([("Name", .string("a")), ("Name", .string("b"))])
        #expect(throws: DBusError.malformed("property Name twice")) { try twice.properties() }
        let wrong = DBusValue.dictionary(key: .string, value: .string, [DBusDictionaryEntry(.string("a"), .string("b"))])
        #expect(throws: DBusError.malformed("expected a{sv}, got a{ss}")) { try wrong.properties() }
    }

    @Test func managedObjectsReadNestedDictionaries() throws {
        let path = try DBusObjectPath("/org/bluez/hci0/dev_00_11")
        let interfaces = DBusValue.dictionary(
            key: .string, value: .dictionary(key: .string, value: .variant),
            [
                DBusDictionaryEntry(.string("org.bluez.Device1"), Self.properties([("Connected", .boolean(true))]))
            ])
        let objects = DBusValue.dictionary(
            key: .objectPath, value: interfaces.type, [DBusDictionaryEntry(.objectPath(path), interfaces)])
        #expect(try objects.managedObjects() == [path: ["org.bluez.Device1": ["Connected": .boolean(true)]]])
        let twice = DBusValue.dictionary(
            key: .objectPath, value: interfaces.type,
            [
                DBusDictionaryEntry(.objectPath(path), interfaces), DBusDictionaryEntry(.objectPath(path), interfaces),
            ])
        #expect(throws: DBusError.malformed("object /org/bluez/hci0/dev_00_11 twice")) { try twice.managedObjects() }
        #expect(throws: DBusError.self) { try interfaces.managedObjects() }
    }

    @Test func standardSignalsDecodeOnlyTheirSignature() throws {
        let path = try DBusObjectPath("/t")
        let changed = DBusMessage(
            sender: ":1.5", path: path, interface: DBusStandard.properties, member: "PropertiesChanged",
            arguments: [.string("org.x.I"), Self.properties([("Level", .byte(80))]), .array(.string, [.string("Gone")])])
        let decoded = try DBusPropertiesChanged(changed)
        #expect(decoded.interface == "org.x.I" && decoded.changed == ["Level": .byte(80)] && decoded.invalidated == ["Gone"])
        var short = changed
        short.arguments.removeLast()
        #expect(throws: DBusError.malformed("expected (sa{sv}as), got (sa{sv})")) { try DBusPropertiesChanged(short) }

        let owner = DBusMessage(
            sender: "org.freedesktop.DBus", path: nil, interface: nil, member: "NameOwnerChanged",
            arguments: [.string("org.bluez"), .string(":1.2"), .string("")])
        #expect(try DBusNameOwnerChanged(owner) == DBusNameOwnerChanged(owner))
        #expect(try DBusNameOwnerChanged(owner).newOwner == nil)
        #expect(try DBusNameOwnerChanged(owner).oldOwner == ":1.2")

        let removed = DBusMessage(
            sender: nil, path: nil, interface: nil, member: nil,
            arguments: [.objectPath(path), .array(.string, [.string("org.x.I")])])
        #expect(try DBusInterfacesRemoved(removed).interfaces == ["org.x.I"])
        #expect(throws: DBusError.self) { try DBusInterfacesAdded(removed) }
    }

    @Test func builtValuesAreCheckedBeforeSending() throws {
        #expect(throws: DBusError.invalidArgument("array of s holds a i")) {
            try DBusValue.array(.string, [.string("a"), .int32(1)]).checkWellFormed()
        }
        #expect(throws: DBusError.invalidArgument("string with a NUL byte")) { try DBusValue.string("a\u{0}b").checkWellFormed() }
        #expect(throws: DBusError.self) { try DBusValue.structure([]).checkWellFormed() }
        #expect(throws: DBusError.self) {
            try DBusValue.dictionary(key: .variant, value: .string, []).checkWellFormed()
        }
        var deep = DBusValue.byte(0)
        for _ in 0..<33 { deep = .array(deep.type, [deep]) }
        #expect(throws: DBusError.self) { try deep.checkWellFormed() }
        try DBusValue.variant(.dictionary(key: .string, value: .variant, [])).checkWellFormed()
    }

    @Test func objectPathsFollowTheSpecification() {
        for good in ["/", "/a", "/org/bluez/hci0/dev_AA_BB", "/_1/x"] { #expect(DBusObjectPath.isValid(good), "\(good)") }
        for bad in ["", "a", "/a/", "//", "/a//b", "/a-b", "/a.b", "/ä"] { #expect(!DBusObjectPath.isValid(bad), "\(bad)") }
    }

    @Test func matchRulesQuoteEveryValueByteForByte() throws {
        let match = DBusMatch(
            sender: "org.bluez", path: try DBusObjectPath("/org/bluez"), interface: "org.x.I", member: "M",
            arg0: "it's,type='method_call'")
        #expect(
            Array(match.rule.utf8)
                == Array(
                    "type='signal',sender='org.bluez',path='/org/bluez',interface='org.x.I',member='M',arg0='it'\\''s,type='\\''method_call'\\'''"
                        .utf8))
        #expect(
            DBusNameOwnerChanged.match(name: "org.bluez").rule
                == "type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='org.bluez'"
        )
    }

    @Test func textFromTheBusIsBoundedAndEscapedForLogs() {
        #expect(DBusText.escaped("org.bluez.Error.Failed") == "org.bluez.Error.Failed")
        #expect(DBusText.escaped("a\nb\\c\u{7F}é") == "a\\x0ab\\x5cc\\x7f\\xc3\\xa9")
        #expect(DBusText.escaped(String(repeating: "x", count: 10_000)) == String(repeating: "x", count: 255) + "…")
        let error = DBusError(name: "org.x.Error.Bad\nforged line", message: String(repeating: "m", count: 1000))
        #expect(error == .remote(name: "org.x.Error.Bad\\x0aforged line", message: String(repeating: "m", count: 255) + "…"))
        #expect(DBusError(name: "org.freedesktop.DBus.Error.Timeout", message: "") == .timedOut)
    }

    @Test func timeoutsAreClampedToTheLimit() {
        #expect(DBusConnection.microseconds(.milliseconds(250), limit: 300_000_000) == 250_000)
        #expect(DBusConnection.microseconds(.zero, limit: 300_000_000) == 1)
        #expect(DBusConnection.microseconds(.seconds(-5), limit: 300_000_000) == 1)
        #expect(DBusConnection.microseconds(.seconds(Int64.max), limit: 300_000_000) == 300_000_000)
    }
}

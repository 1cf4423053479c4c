/// What bluetoothd tells of a device's advertising (`Name`, `UUIDs`, `ManufacturerData`,
/// `ServiceData`, `RSSI` on `Device1`) written back as the AD structures a radio scan would have
/// heard, so that matching by name or service is the same code on every transport. bluetoothd
/// keeps these from advertising and from GATT (a paired device's `UUIDs` lists its services).
extension BlueZDevice {
    static let completeServiceUUIDs128: UInt8 = 0x07
    static let serviceData16: UInt8 = 0x16
    static let serviceData128: UInt8 = 0x21
    static let manufacturerSpecific: UInt8 = 0xFF

    public var advertisingData: AdvertisingData {
        var structures: [AdvertisingData.Structure] = []
        if let name { structures.append(.init(type: AdvertisingData.completeLocalName, value: Array(name.utf8))) }
        let short = serviceUUIDs.compactMap(\.short)
        if !short.isEmpty {
            structures.append(
                .init(type: AdvertisingData.completeServiceUUIDs16, value: short.flatMap { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }))
        }
        let long = serviceUUIDs.filter { $0.short == nil }
        if !long.isEmpty {
            structures.append(.init(type: Self.completeServiceUUIDs128, value: long.flatMap(\.littleEndianBytes)))
        }
        for uuid in serviceData.keys.sorted(by: { $0.littleEndianBytes.lexicographicallyPrecedes($1.littleEndianBytes) }) {
            let type = uuid.short == nil ? Self.serviceData128 : Self.serviceData16
            structures.append(.init(type: type, value: uuid.onAirBytes + (serviceData[uuid] ?? [])))
        }
        for company in manufacturerData.keys.sorted() {
            structures.append(
                .init(
                    type: Self.manufacturerSpecific,
                    value: [UInt8(company & 0xFF), UInt8(company >> 8)] + (manufacturerData[company] ?? [])))
        }
        return AdvertisingData(structures: structures)
    }

    /// The device as one scan report; `endpoint` is its object path (where `connect` goes).
    public var scanReport: BLEScanReport {
        BLEScanReport(address: address, addressType: addressType, data: advertisingData, rssi: rssi, endpoint: path.rawValue)
    }
}

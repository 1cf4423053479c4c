extension IIODeviceDescription {
    /// The scan layout when exactly `channels` (any order) are enabled, plus the device's
    /// `in_timestamp` element when `timestamp` is true and it has one. Several functions of one
    /// chip share its buffer (BMI160 accel + gyro), so pass the union of the channels of every
    /// function being recorded: enabling a channel changes every other channel's offset.
    public func scanLayout(enabling channels: [IIOChannelID], timestamp: Bool = true) throws(ScanLayoutError) -> ScanLayout {
        var specs: [ScanElementSpec] = []
        for id in Set(channels) {
            guard let element = channel(id.prefix)?.scanElement else { throw .notBuffered(id.prefix) }
            specs.append(ScanElementSpec(channel: id.prefix, index: element.index, type: element.type))
        }
        return try ScanLayout(elements: specs, timestamp: timestamp ? timestampElement : nil)
    }
}

import SensorKitModel

extension SRReader {
    /// The samples of `(from, to]` (SR ns, exactly: no round trip through `SRAbsoluteTime`'s
    /// Double) on the device `deviceIdentifier`, as typed batches. For code that keeps resume
    /// points as integers, like the exporter's cursors (docs/export.md).
    public func batches(
        device deviceIdentifier: String, fromNanoseconds from: Int64, toNanoseconds to: Int64,
        window: Int = WireLimits.defaultFetchWindow
    ) throws -> SRFetchBatches {
        guard from <= to else {
            throw SRError(.fetchRequestInvalid, message: "the range is inverted: to (\(to)) is before from (\(from))")
        }
        var wire = WireRequest(id: 0, op: .fetch)
        wire.sensor = sensor.rawValue
        wire.device = deviceIdentifier
        wire.from = from
        wire.to = to
        return SRFetchBatches(sensor: sensor, request: wire, window: window)
    }
}

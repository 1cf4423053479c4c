/// One scan element as the layout needs it: which channel, its `_index`, its `_type`.
public struct ScanElementSpec: Hashable, Sendable {
    /// The channel's attribute prefix, e.g. `in_accel_x` or `in_timestamp`.
    public var channel: String
    /// `scan_elements/<channel>_index`: orders the elements; not contiguous.
    public var index: Int
    public var type: ScanType

    public init(channel: String, index: Int, type: ScanType) {
        self.channel = channel
        self.index = index
        self.type = type
    }
}

/// Where each enabled element sits in one scan read from `/dev/iio:deviceN`, computed the way the
/// kernel does (`iio_compute_scan_bytes` in drivers/iio/industrialio-buffer.c; docs/iio.md §12.5):
///
/// 1. the enabled channels in ascending `_index`;
/// 2. each at `offset = roundup(offset, elementBytes)` where `elementBytes = storagebits/8 × repeat`;
/// 3. the timestamp after them, aligned the same way (the kernel keeps it out of the scan mask and
///    always places it last);
/// 4. the scan size rounded up to the largest element.
///
/// The kernel's `ALIGN` assumes a power of two; for a repeat that makes `elementBytes` a
/// non-power of two (none in mainline drivers) we round up to a multiple, as the kernel's demux
/// (`iio_buffer_update_demux`, `roundup`) does. Pure.
public struct ScanLayout: Hashable, Sendable {
    public struct Slot: Hashable, Sendable {
        public let channel: String
        public let index: Int
        public let type: ScanType
        /// Byte offset of the element's first value within the scan.
        public let offset: Int
        /// Position of the element's first value in `ScanDecoder`'s value array (repeats follow);
        /// nil for the timestamp, which is returned on its own.
        public let firstValue: Int?
    }

    /// Data elements in scan order, then the timestamp if enabled.
    public let slots: [Slot]
    /// The timestamp element (`in_timestamp`, normally `le:s64/64>>0`, nanoseconds), if enabled.
    public let timestamp: Slot?
    /// Bytes per scan, padding included: what one scan occupies in a read.
    public let scanBytes: Int
    /// How many Int64 values one scan decodes to (each repeat counts), the timestamp excluded.
    public let valueCount: Int

    /// Lays out `elements` (the enabled data channels, any order) and an optional timestamp.
    /// Throws when two elements claim the same `_index` or nothing is enabled.
    public init(elements: [ScanElementSpec], timestamp: ScanElementSpec? = nil) throws(ScanLayoutError) {
        let ordered = elements.sorted { $0.index < $1.index }
        for (a, b) in zip(ordered, ordered.dropFirst()) where a.index == b.index {
            throw .duplicateIndex(a.index, a.channel, b.channel)
        }
        if let timestamp, let clash = ordered.first(where: { $0.index == timestamp.index }) {
            throw .duplicateIndex(timestamp.index, clash.channel, timestamp.channel)
        }
        guard !ordered.isEmpty || timestamp != nil else { throw .nothingEnabled }

        var slots: [Slot] = []
        var offset = 0
        var largest = 0
        var values = 0
        for element in ordered {
            let size = element.type.elementBytes
            offset = Self.roundUp(offset, to: size)
            slots.append(
                Slot(
                    channel: element.channel, index: element.index, type: element.type,
                    offset: offset, firstValue: values))
            offset += size
            largest = max(largest, size)
            values += element.type.repeatCount
        }
        var timestampSlot: Slot?
        if let timestamp {
            let size = timestamp.type.elementBytes
            offset = Self.roundUp(offset, to: size)
            let slot = Slot(
                channel: timestamp.channel, index: timestamp.index, type: timestamp.type,
                offset: offset, firstValue: nil)
            slots.append(slot)
            timestampSlot = slot
            offset += size
            largest = max(largest, size)
        }
        self.slots = slots
        self.timestamp = timestampSlot
        self.scanBytes = Self.roundUp(offset, to: largest)
        self.valueCount = values
    }

    /// The slot of a data channel, by attribute prefix.
    public func slot(for channel: String) -> Slot? {
        slots.first { $0.channel == channel && $0.firstValue != nil }
    }

    static func roundUp(_ value: Int, to multiple: Int) -> Int {
        precondition(multiple > 0)
        return (value + multiple - 1) / multiple * multiple
    }
}

/// Scan elements that cannot form a layout.
public enum ScanLayoutError: Error, Hashable, Sendable, CustomStringConvertible {
    case duplicateIndex(Int, String, String)
    case nothingEnabled
    /// A channel asked for has no scan element.
    case notBuffered(String)

    public var description: String {
        switch self {
        case let .duplicateIndex(index, first, second): "scan index \(index) is claimed by both \(first) and \(second)"
        case .nothingEnabled: "no scan element is enabled"
        case let .notBuffered(channel): "\(channel) has no scan element"
        }
    }
}

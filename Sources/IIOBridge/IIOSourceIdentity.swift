/// The stable identity of one IIO device's streams (`SourceDescriptor.source`, docs/iio.md §2
/// "Source identity"): `iio:<name>[/<label>][#<k>]@<parent sysfs path>`.
///
/// - The parent path survives a replug on the same port even when the kernel numbers the device
///   `iio:device1` the second time.
/// - The `label` (5.8+; `accel-display`, `accel-base`) tells apart devices of the same part under
///   one parent, and does not depend on probe order.
/// - `#k` (k ≥ 1) is the device's place among earlier devices of the same name and label under
///   the same parent, by device number: stable wherever the parent probes its children in a fixed
///   order, which is what the hardware allows when it gives nothing better. The first keeps the
///   plain form, so a lone device's identity is the same whether or not siblings exist.
/// Pure.
public struct IIOSourceIdentity: Hashable, Sendable {
    public var label: String?
    /// Earlier siblings (same parent, name and label; lower `iio:deviceN`).
    public var earlierTwins: Int

    public init(label: String? = nil, earlierTwins: Int = 0) {
        self.label = label
        self.earlierTwins = earlierTwins
    }

    /// The identity of a device named `name` at `syspath` (a remote "syspath" is `<uri>/iio:deviceN`
    /// and is used whole).
    public func sourceID(name: String, syspath: String) -> String {
        var id = "iio:" + name
        if let label, !label.isEmpty { id += "/" + label }
        if earlierTwins > 0 { id += "#\(earlierTwins)" }
        guard syspath.hasPrefix("/") else { return id + "@" + syspath }
        let parent = syspath.split(separator: "/").dropLast().joined(separator: "/")
        return id + "@/" + parent
    }

    /// How many of `siblings` (name, label, device number of every IIO device under the same
    /// parent) come before device `number` with the same name and label.
    public static func earlierTwins(
        name: String, label: String?, number: Int,
        siblings: [(name: String, label: String?, number: Int)]
    ) -> Int {
        siblings.filter { $0.name == name && $0.label == label && $0.number < number }.count
    }

    /// `N` of `iio:deviceN`; nil for anything else.
    public static func deviceNumber(_ sysname: some StringProtocol) -> Int? {
        guard sysname.hasPrefix("iio:device") else { return nil }
        return Int(sysname.dropFirst("iio:device".count))
    }
}

/// What the store tells its owner about new samples it cannot keep (`SensorStore`'s `onLoss`):
/// each report of a loss counts the samples lost since the previous one (dropped to keep the disk
/// budget, or taken by a failed write; every one inside a deletion record), and `recovered`
/// comes once, with the first samples written after a loss.
public enum StoreLossEvent: Hashable, Sendable {
    case losing(samples: Int)
    case recovered
}

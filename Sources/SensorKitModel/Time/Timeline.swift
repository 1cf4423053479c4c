/// The SR timeline of one machine: how `CLOCK_BOOTTIME` instants of every boot map onto one
/// monotonic `SRAbsoluteTime` (DESIGN §5, docs/design-notes/0001-time.md).
///
/// - `origin`: the CF-epoch nanosecond that is SR time 0, fixed when the timeline is founded
///   (midnight UTC of the daemon's first start). SR values stay small, so a Double holds them to
///   the nanosecond for ~97 days, where CF-epoch values would round to ~119 ns.
/// - `anchors`: per boot, the SR nanosecond at which that boot's `CLOCK_BOOTTIME` was zero,
///   taken once (the first time the daemon runs in that boot) as `realtime − boottime − origin`.
///   A boot's anchor never changes afterwards, so stepping the wall clock moves nothing.
/// - `highWater`: the latest SR nanosecond known to be handed out. A new boot's anchor is raised
///   if needed so its first instant lies after it: the timeline never runs backwards, even when
///   the wall clock was wrong or stepped back across a reboot.
public struct Timeline: Hashable, Sendable, Codable {
    public private(set) var origin: Int64
    public private(set) var anchors: [BootID: Int64]
    public private(set) var highWater: Int64

    /// The boot whose anchor was adopted last (the one the daemon runs in).
    public private(set) var currentBoot: BootID?

    /// A timeline founded now: the origin is midnight UTC of the clock's wall time.
    public static func founded(by clock: any SystemClock) -> Timeline {
        let day: Int64 = 86_400 * 1_000_000_000
        let origin = clock.realtimeCFNanoseconds().floorDividedBy(day).quotient * day
        return Timeline(origin: origin, anchors: [:], highWater: Int64.min)
    }

    public init(origin: Int64, anchors: [BootID: Int64], highWater: Int64, currentBoot: BootID? = nil) {
        self.origin = origin
        self.anchors = anchors
        self.highWater = highWater
        self.currentBoot = currentBoot
    }

    /// What adopting a boot did, for the daemon's log.
    public enum Adoption: Hashable, Sendable {
        /// The boot already had an anchor (the daemon restarted within a boot).
        case kept(anchor: Int64)
        /// A new anchor from the wall clock.
        case anchored(anchor: Int64)
        /// The wall clock would have put this boot before already recorded time; the anchor was
        /// raised by `raisedBy` nanoseconds so the timeline keeps increasing.
        case raised(anchor: Int64, raisedBy: Int64)
    }

    /// Makes the clock's current boot part of the timeline; call once at daemon start.
    @discardableResult
    public mutating func adoptCurrentBoot(of clock: any SystemClock) -> Adoption {
        let boot = clock.bootID
        currentBoot = boot
        if let anchor = anchors[boot] { return .kept(anchor: anchor) }
        // `origin` and `highWater` come from a file and the clocks may read anything: saturate.
        let boottime = clock.boottimeNanoseconds()
        let candidate = clock.realtimeCFNanoseconds().subtractingSaturating(origin).subtractingSaturating(boottime)
        if highWater != Int64.min, candidate.addingSaturating(boottime) <= highWater {
            let anchor = highWater.addingSaturating(1).subtractingSaturating(boottime)
            anchors[boot] = anchor
            return .raised(anchor: anchor, raisedBy: anchor.subtractingSaturating(candidate))
        }
        anchors[boot] = candidate
        return .anchored(anchor: candidate)
    }

    /// Records that SR time up to `nanoseconds` has been handed out (persist it with the timeline).
    public mutating func advanceHighWater(to nanoseconds: Int64) {
        highWater = max(highWater, nanoseconds)
    }

    /// The SR nanosecond of a boot instant; nil for a boot this timeline never adopted. An instant
    /// may come straight from a device (a glitching chip's `INT64_MAX` timestamp): the sum
    /// saturates instead of trapping.
    public func srNanoseconds(of instant: BootInstant) -> Int64? {
        anchors[instant.boot].map { $0.addingSaturating(instant.nanoseconds) }
    }

    /// The SR time of a boot instant; nil for a boot this timeline never adopted.
    public func srTime(of instant: BootInstant) -> SRAbsoluteTime? {
        srNanoseconds(of: instant).map(SRAbsoluteTime.init(nanoseconds:))
    }

    /// The boot-clock instant of an SR nanosecond in the given boot; nil for an unknown boot.
    public func bootInstant(srNanoseconds: Int64, in boot: BootID) -> BootInstant? {
        anchors[boot].map { BootInstant(boot: boot, nanoseconds: srNanoseconds.subtractingSaturating($0)) }
    }

    /// The SR time now, read from the clock's current boot (nil until that boot is adopted).
    public func now(_ clock: any SystemClock) -> SRAbsoluteTime? {
        srTime(of: clock.now())
    }

    /// `CFAbsoluteTime − SRAbsoluteTime` right now, in seconds: the *current* offset that Apple's
    /// `SRAbsoluteTimeToCFAbsoluteTime`/`FromCFAbsoluteTime` use. It changes when the wall clock
    /// is stepped, exactly as Apple documents ("relative to the current wall clock").
    public func cfOffsetNanoseconds(_ clock: any SystemClock) -> Int64? {
        let instant = clock.now()
        guard let sr = srNanoseconds(of: instant) else { return nil }
        return clock.realtimeCFNanoseconds().subtractingSaturating(sr)
    }

    public func toCFAbsoluteTime(_ time: SRAbsoluteTime, clock: any SystemClock) -> CFAbsoluteTime? {
        cfOffsetNanoseconds(clock).map { time.rawValue + Double($0) / 1e9 }
    }

    public func fromCFAbsoluteTime(_ cf: CFAbsoluteTime, clock: any SystemClock) -> SRAbsoluteTime? {
        cfOffsetNanoseconds(clock).map { SRAbsoluteTime(cf - Double($0) / 1e9) }
    }
}

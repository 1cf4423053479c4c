/// The SR timeline of one machine: how `CLOCK_BOOTTIME` instants of every boot map onto one
/// monotonic `SRAbsoluteTime` (docs/design-notes/0001-time.md, 0005-clock-steps.md).
///
/// - `origin`: the CF-epoch nanosecond that is SR time 0, fixed when the timeline is founded
///   (midnight UTC of the daemon's first start). SR values stay small, so a Double holds them to
///   the nanosecond for ~97 days, where CF-epoch values would round to ~119 ns.
/// - `anchors`: per boot, the SR nanosecond at which that boot's `CLOCK_BOOTTIME` was zero,
///   taken once (the first time the daemon runs in that boot). A boot's anchor never changes
///   afterwards, so stepping the wall clock moves nothing.
/// - `highWater`: the latest SR nanosecond known to be handed out. A new boot starts after it:
///   the timeline never runs backwards, even when the wall clock was wrong or stepped back.
/// - `unprovenBoots`: boots anchored while the kernel did not report the wall clock
///   synchronised. Such a boot starts right after `highWater`: the timeline counts only the
///   time it can prove (the new boot's own `CLOCK_BOOTTIME`), never a wall-clock jump, so the
///   hold is never cut short by a clock set ahead across a reboot.
///   A boot whose *synchronised* wall clock puts it more than `maxUnconfirmedAdvance` past
///   `highWater` is one of them too (a clock synchronised to a wrong source is still wrong) until
///   a person confirms the clock, which lets the next boot be anchored by it.
public struct Timeline: Hashable, Sendable, Codable {
    public private(set) var origin: Int64
    public private(set) var anchors: [BootID: Int64]
    public private(set) var highWater: Int64
    public private(set) var unprovenBoots: Set<BootID>

    /// How far past recorded time a synchronised wall clock may put a new boot without a person
    /// confirming it: half of SensorKit's 24 h hold, so a wrong clock can release held data at
    /// most 12 h early, while a night switched off (the common case) is believed as it is.
    public static let maxUnconfirmedAdvance: Int64 = 12 * 3_600 * 1_000_000_000

    /// The boot whose anchor was adopted last (the one the daemon runs in).
    public private(set) var currentBoot: BootID?

    /// A timeline founded now: the origin is midnight UTC of the clock's wall time.
    public static func founded(by clock: any SystemClock) -> Timeline {
        let day: Int64 = 86_400 * 1_000_000_000
        let origin = clock.realtimeCFNanoseconds().floorDividedBy(day).quotient * day
        return Timeline(origin: origin, anchors: [:], highWater: Int64.min)
    }

    public init(
        origin: Int64, anchors: [BootID: Int64], highWater: Int64, currentBoot: BootID? = nil,
        unprovenBoots: Set<BootID> = []
    ) {
        self.origin = origin
        self.anchors = anchors
        self.highWater = highWater
        self.currentBoot = currentBoot
        self.unprovenBoots = unprovenBoots
    }

    private enum CodingKeys: String, CodingKey {
        case origin, anchors, highWater, currentBoot, unprovenBoots
    }

    /// Files written before `unprovenBoots` existed read as "every boot proven" (they were
    /// anchored by the wall clock, as the rule then was).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        origin = try container.decode(Int64.self, forKey: .origin)
        anchors = try container.decode([BootID: Int64].self, forKey: .anchors)
        highWater = try container.decode(Int64.self, forKey: .highWater)
        currentBoot = try container.decodeIfPresent(BootID.self, forKey: .currentBoot)
        unprovenBoots = try container.decodeIfPresent(Set<BootID>.self, forKey: .unprovenBoots) ?? []
    }

    /// Whether the current boot's anchor counts only the time it can prove (its wall clock was not
    /// synchronised, or claimed more than `maxUnconfirmedAdvance` unconfirmed).
    public var currentBootIsUnproven: Bool { currentBoot.map { unprovenBoots.contains($0) } ?? false }

    /// What adopting a boot did, for the daemon's log.
    public enum Adoption: Hashable, Sendable {
        /// The boot already had an anchor (the daemon restarted within a boot).
        case kept(anchor: Int64)
        /// A new anchor from the synchronised wall clock (or the first boot of a new timeline).
        case anchored(anchor: Int64)
        /// The wall clock would have put this boot before already recorded time; the anchor was
        /// raised by `raisedBy` nanoseconds so the timeline keeps increasing.
        case raised(anchor: Int64, raisedBy: Int64)
        /// The wall clock is not synchronised and says `unprovenBy` nanoseconds more passed than
        /// can be proven: the boot starts right after recorded time instead (0005-clock-steps.md).
        case unproven(anchor: Int64, unprovenBy: Int64)
        /// The wall clock is synchronised but says `claimed` nanoseconds passed since recorded
        /// time, more than `maxUnconfirmedAdvance`: the boot starts right after recorded time
        /// until a person confirms the clock (0005-clock-steps.md §1).
        case unconfirmed(anchor: Int64, claimed: Int64)
    }

    /// Makes the clock's current boot part of the timeline; call once at daemon start.
    ///
    /// A new boot starts after `highWater` (its `CLOCK_BOOTTIME` zero lies one nanosecond past
    /// it), and later than that only by what a synchronised wall clock says passed — at most
    /// `maxAdvance` unless `confirmed` (a person confirmed the clock since the last boot).
    @discardableResult
    public mutating func adoptCurrentBoot(
        of clock: any SystemClock, maxAdvance: Int64 = Timeline.maxUnconfirmedAdvance,
        confirmed: Bool = false
    ) -> Adoption {
        let boot = clock.bootID
        currentBoot = boot
        if let anchor = anchors[boot] { return .kept(anchor: anchor) }
        let synchronized = clock.wallClockSynchronized()
        let wall = clock.realtimeCFNanoseconds().subtractingSaturating(origin).subtractingSaturating(clock.boottimeNanoseconds())
        if !synchronized { unprovenBoots.insert(boot) }
        guard highWater != Int64.min else {
            anchors[boot] = wall
            return .anchored(anchor: wall)
        }
        let floor = highWater.addingSaturating(1)
        if wall < floor {
            anchors[boot] = floor
            return .raised(anchor: floor, raisedBy: floor.subtractingSaturating(wall))
        }
        if synchronized {
            let claimed = wall.subtractingSaturating(floor)
            if claimed > maxAdvance, !confirmed {
                anchors[boot] = floor
                unprovenBoots.insert(boot)
                return .unconfirmed(anchor: floor, claimed: claimed)
            }
            anchors[boot] = wall
            return .anchored(anchor: wall)
        }
        anchors[boot] = floor
        return .unproven(anchor: floor, unprovenBy: wall.subtractingSaturating(floor))
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

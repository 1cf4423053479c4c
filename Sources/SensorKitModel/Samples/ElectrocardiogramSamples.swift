import Foundation

/// The recording an ECG batch belongs to (Apple's `SRElectrocardiogramSession`, iOS 17.4).
///
/// On Linux: one Polar PMD ECG stream from start to stop; `identifier` ties the batches of that
/// stream together across fetch results.
public final class SRElectrocardiogramSession: NSObject, Sendable {
    /// Apple's `SRElectrocardiogramSessionState` (`NSInteger`).
    public enum State: Int, Sendable, CaseIterable {
        case begin = 1
        case active = 2
        case end = 3
    }

    /// Apple's `SRElectrocardiogramSessionGuidance` (`NSInteger`): guided sessions are usually of
    /// fixed duration with coaching; unguided ones are not.
    public enum SessionGuidance: Int, Sendable, CaseIterable {
        case guided = 1
        case unguided = 2
    }

    public let state: State
    public let sessionGuidance: SessionGuidance
    /// Ties samples across several fetch results to the same session.
    public let identifier: String

    public init(state: State, sessionGuidance: SessionGuidance, identifier: String) {
        self.state = state
        self.sessionGuidance = sessionGuidance
        self.identifier = identifier
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRElectrocardiogramSession else { return false }
        return state == other.state && sessionGuidance == other.sessionGuidance && identifier == other.identifier
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(state)
        hasher.combine(sessionGuidance)
        hasher.combine(identifier)
        return hasher.finalize()
    }

    public override var description: String {
        "SRElectrocardiogramSession(\(identifier), state: \(state), guidance: \(sessionGuidance))"
    }
}

/// One ECG value (Apple's `SRElectrocardiogramData`).
public final class SRElectrocardiogramData: NSObject, Sendable {
    /// Apple's `SRElectrocardiogramDataFlags` (`NS_OPTIONS(NSUInteger)`; `None` = 0 is `[]`).
    public struct Flags: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }

        /// The value is not a valid ECG signal.
        public static let signalInvalid = Flags(rawValue: 1 << 0)
        /// The wearer touched the crown (Apple Watch); never set by Linux sources.
        public static let crownTouched = Flags(rawValue: 1 << 1)
    }

    public let flags: Flags
    /// The ECG AC value, held in microvolts whatever unit the initialiser was given.
    public let value: Measurement<UnitElectricPotentialDifference>

    public init(flags: Flags, value: Measurement<UnitElectricPotentialDifference>) {
        self.flags = flags
        self.value = value.expressed(in: .microvolts)
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRElectrocardiogramData else { return false }
        return flags == other.flags && value == other.value
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(flags.rawValue)
        hasher.combine(value.value)
        return hasher.finalize()
    }

    public override var description: String {
        "SRElectrocardiogramData(\(value.value) µV, flags: \(flags.rawValue))"
    }
}

/// A batch of ECG values (Apple's `SRElectrocardiogramSample`); SensorKit's `electrocardiogram`
/// sensor delivers these in arrays: `result.sample as? [SRElectrocardiogramSample]`.
///
/// On Linux: one Polar PMD ECG frame (µV at 130 Hz on the H10), its device time mapped onto the
/// host clock (docs/ble.md §3).
public final class SRElectrocardiogramSample: NSObject, Sendable {
    /// Apple's `SRElectrocardiogramLead` (`NSInteger`): which electrodes the voltage is between.
    public enum Lead: Int, Sendable, CaseIterable {
        case rightArmMinusLeftArm = 1
        case leftArmMinusRightArm = 2
    }

    /// The start of this batch of ECG data (not of the session).
    public let date: Date
    /// The sampling frequency, held in hertz.
    public let frequency: Measurement<UnitFrequency>
    public let session: SRElectrocardiogramSession
    public let lead: Lead
    /// The values, oldest first, `1 / frequency` apart.
    public let data: [SRElectrocardiogramData]

    public init(
        date: Date, frequency: Measurement<UnitFrequency>, session: SRElectrocardiogramSession, lead: Lead,
        data: [SRElectrocardiogramData]
    ) {
        self.date = date
        self.frequency = frequency.expressed(in: .hertz)
        self.session = session
        self.lead = lead
        self.data = data
    }

    public override func isEqual(_ object: Any?) -> Bool {
        guard let other = object as? SRElectrocardiogramSample else { return false }
        return date == other.date && frequency == other.frequency && session == other.session
            && lead == other.lead && data == other.data
    }

    public override var hash: Int {
        var hasher = Hasher()
        hasher.combine(date)
        hasher.combine(session)
        hasher.combine(data.count)
        return hasher.finalize()
    }

    public override var description: String {
        "SRElectrocardiogramSample(\(data.count) values at \(frequency.value) Hz from \(date), lead: \(lead), "
            + "session: \(session.identifier))"
    }
}

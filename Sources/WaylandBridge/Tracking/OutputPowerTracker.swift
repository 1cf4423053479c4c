/// The outputs' power modes as a value: reports an output's mode when first seen and when it
/// changes; a repeated mode (the protocol resends it after every commit) reports nothing.
public struct OutputPowerTracker: Sendable {
    /// A hostile compositor could announce outputs without end; beyond this many new ones are ignored.
    public static let maximumOutputs = 64

    public enum Event: Sendable, Equatable {
        /// The `mode` event's raw value: 0 off, 1 on; anything else is refused.
        case mode(output: String, UInt32, at: UInt64)
        /// The output went away or its power object failed: forget it, so a returning output is
        /// reported afresh.
        case removed(output: String)
    }

    private var modes: [String: Bool] = [:]

    public init() {}

    public mutating func on(_ event: Event) -> [CompositorEvent] {
        switch event {
        case .mode(let output, let raw, let at):
            guard raw <= 1 else { return [] }
            let on = raw == 1
            guard modes[output] != on else { return [] }
            guard modes[output] != nil || modes.count < Self.maximumOutputs else { return [] }
            modes[output] = on
            return [.outputPower(output: output, on: on, at: at)]
        case .removed(let output):
            modes[output] = nil
            return []
        }
    }
}

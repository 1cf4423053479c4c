/// Joins a control-point response sent in parts (`more = 1`) into one, bounded: a device that
/// never ends its continuation, or sends more than any real response holds, gets its response
/// refused instead of the queue's time and memory. Parts are appended in place (linear in the
/// bytes received), never re-copied per part.
public struct PMDResponseAssembler: Sendable {
    /// A real response (settings, features) fits one or two indications; 16 is generous.
    public static let maximumParts = 16
    /// The parameters of every part together; a settings list is a few dozen bytes.
    public static let maximumBytes = 4096

    public enum Outcome: Equatable, Sendable {
        /// More parts are announced.
        case incomplete
        case complete(PMDResponse)
        /// The parts so far were dropped: too many, too long, or a part that does not continue them.
        case refused(String)
    }

    private var partial: PMDResponse?
    private var parts = 0

    public init() {}

    public var isAssembling: Bool { partial != nil }

    public mutating func add(_ part: PMDResponse) -> Outcome {
        guard var joined = partial else {
            if part.more {
                guard part.parameters.count <= Self.maximumBytes else {
                    return refuse("a part of \(part.parameters.count) bytes")
                }
                partial = part
                parts = 1
                return .incomplete
            }
            return .complete(part)
        }
        guard part.opcode == joined.opcode, part.measurementType == joined.measurementType else {
            return refuse("a part of another response (opcode \(part.opcode)) inside a continuation")
        }
        parts += 1
        guard parts <= Self.maximumParts else { return refuse("more than \(Self.maximumParts) parts") }
        guard joined.parameters.count + part.parameters.count <= Self.maximumBytes else {
            return refuse("more than \(Self.maximumBytes) bytes")
        }
        partial = nil  // `joined` is the only reference: appending copies nothing already held
        joined.parameters.append(contentsOf: part.parameters)
        joined.more = part.more
        joined.status = part.status
        if part.more {
            partial = joined
            return .incomplete
        }
        parts = 0
        return .complete(joined)
    }

    public mutating func reset() {
        partial = nil
        parts = 0
    }

    private mutating func refuse(_ why: String) -> Outcome {
        reset()
        return .refused(why)
    }
}

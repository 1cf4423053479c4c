/// Which advertiser a wearable configured by `name =` binds. Any device in range can advertise a
/// matching name, so the choice is made again at every connect rather than kept from the first
/// match: the address that showed skin contact (a real strap on a person) comes first; then the
/// addresses whose links never failed without showing contact, before those that did (fewest
/// failures first), then by address so the order is stable. Every candidate is reported once so
/// the log shows who answered to the name. Bounded: at most `remembered` addresses are kept.
struct WearableCandidates: Equatable {
    struct Candidate: Equatable {
        var address: String
        var name: String?
    }

    static let remembered = 64

    /// The address that showed skin contact last.
    private(set) var trusted: String?
    private var failures: [String: Int] = [:]
    private var reported: Set<String> = []

    /// The candidate to connect to among `candidates` (all matching the pattern; addresses upper
    /// case), and the candidates not reported before.
    mutating func choose(_ candidates: [Candidate]) -> (chosen: Candidate?, new: [Candidate]) {
        var new: [Candidate] = []
        for candidate in candidates where !reported.contains(candidate.address) && reported.count < Self.remembered {
            reported.insert(candidate.address)
            new.append(candidate)
        }
        let chosen = candidates.min { a, b in
            let rankA = rank(a.address), rankB = rank(b.address)
            return rankA != rankB ? rankA < rankB : a.address < b.address
        }
        return (chosen, new)
    }

    /// The strap at `address` reported skin contact: it is the one to come back to.
    mutating func contactSeen(_ address: String) {
        trusted = address
        failures[address] = nil
    }

    /// A link to `address` ended; without contact seen on it, the address goes behind the others.
    mutating func linkEnded(_ address: String, contactSeen: Bool) {
        guard !contactSeen, address != trusted else { return }
        if failures[address] == nil, failures.count >= Self.remembered { return }
        failures[address] = min(1_000_000, (failures[address] ?? 0) + 1)
    }

    private func rank(_ address: String) -> Int {
        address == trusted ? -1 : failures[address] ?? 0
    }
}

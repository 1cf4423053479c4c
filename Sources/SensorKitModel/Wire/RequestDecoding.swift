import Foundation

/// Why a message frame is not a request (docs/protocol.md §2): answered with error 100 without
/// `id`. The message names what is wrong — the bytes, the shape, or the one field — so a client
/// author sees "field 'id' …" rather than a generic JSON complaint.
public struct WireRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    public let description: String
}

extension WireRequest {
    /// The integer fields and the range each must fit. JSONDecoder reports a number that does not
    /// fit its field (`"id": -1`, `"id": 1.5`, `"from": 1e30`) as "not valid JSON" with no field
    /// named, so these are checked by name once the bytes are known to be JSON.
    static let integerFields: [(name: String, range: ClosedRange<Int64>)] = [
        ("id", 0...Int64(UInt32.max)), ("target", 0...Int64(UInt32.max)),
        ("v", Int64(Int.min)...Int64(Int.max)), ("window", Int64(Int.min)...Int64(Int.max)),
        ("batches", Int64(Int.min)...Int64(Int.max)), ("from", Int64.min...Int64.max), ("to", Int64.min...Int64.max),
    ]

    /// Decodes a request, or says which part of it is malformed.
    public static func decode(_ payload: [UInt8]) throws(WireRequestError) -> WireRequest {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: Data(payload), options: [.fragmentsAllowed])
        } catch {
            throw WireRequestError(description: "the message is not valid JSON")
        }
        guard let object = parsed as? [String: Any] else {
            throw WireRequestError(description: "the message is not a JSON object")
        }
        do {
            return try JSONDecoder().decode(WireRequest.self, from: Data(payload))
        } catch let error as DecodingError {
            throw WireRequestError(description: explain(error, in: object))
        } catch {
            throw WireRequestError(description: "not a request object: \(error)")
        }
    }

    private static func explain(_ error: DecodingError, in object: [String: Any]) -> String {
        switch error {
        case .keyNotFound(let key, _):
            return "field '\(key.stringValue)' is missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            return malformed(field: context.codingPath.first?.stringValue, in: object)
        case .dataCorrupted(let context):
            if let field = context.codingPath.first?.stringValue { return malformed(field: field, in: object) }
            let culprit = integerFields.first { field in object[field.name].map { !fits($0, field.range) } ?? false }
            return malformed(field: culprit?.name, in: object)
        @unknown default:
            return "not a request object: \(error)"
        }
    }

    private static func malformed(field: String?, in object: [String: Any]) -> String {
        guard let field else { return "a field of the request is malformed" }
        let got = object[field].map(shown) ?? "nothing"
        if let range = integerFields.first(where: { $0.name == field })?.range {
            let bounds =
                range == Int64.min...Int64.max || range.lowerBound == Int64(Int.min)
                ? "" : " from \(range.lowerBound) to \(range.upperBound)"
            return "field '\(field)' is malformed: it must be an integer\(bounds), not \(got)"
        }
        return "field '\(field)' is malformed: it has the wrong type (\(got))"
    }

    private static func fits(_ value: Any, _ range: ClosedRange<Int64>) -> Bool {
        guard let number = value as? NSNumber, let exact = Int64("\(number)") else { return false }
        return range.contains(exact)
    }

    private static func shown(_ value: Any) -> String {
        switch value {
        case is String: return "a string"
        case is [Any]: return "an array"
        case is [String: Any]: return "an object"
        case is NSNull: return "null"
        case let number as NSNumber:
            let text = "\(number)"
            return text.count <= 40 ? text : String(text.prefix(40)) + "…"
        default: return "\(type(of: value))"
        }
    }
}

extension WireJSON {
    /// The frame of a reply, never larger than the protocol allows (`WireLimits.maxServerFrame`,
    /// docs/protocol.md §4.1): a reply that would be larger (a huge list, a huge manifest text)
    /// becomes error 109 `replyTooLarge` for the same request. Every JSON frame the daemon sends
    /// goes through here.
    public static func boundedFrame(_ reply: WireReply) -> Frame {
        let frame = WireJSON.frame(reply)
        guard frame.payload.count + 1 > WireLimits.maxServerFrame else { return frame }
        let error = WireError(
            .replyTooLarge,
            "the reply would be \(frame.payload.count + 1) bytes, more than the protocol's frame limit of \(WireLimits.maxServerFrame); ask for less (for example consentList with app)"
        )
        return WireJSON.frame(WireReply.failure(reply.id, error))
    }
}

import Foundation
import SensorKitModel

/// The `NSArray` a batched sensor's `SRFetchResult.sample` is (Apple delivers an `NSArray` of
/// samples), backed by the Swift array of samples it was made from, so that study code's
/// `result.sample as? [CMRecordedAccelerometerData]` costs nothing per sample on Linux.
///
/// Why: with `NSArray(array:)` or `samples as AnyObject`, Linux Foundation boxes every element
/// into its own storage (`__SwiftValue.store`), and the cast back runs Foundation's generic
/// bridging loop (`allObjects`, `__SwiftValue.fetch`, `as? Element`, append) on every element —
/// together more than making the sample object (docs/measurements/fetch.md). Here:
/// - `count` and `object(at:)`, NSArray's two primitives, hand out the elements as they are, so
///   the result is an ordinary NSArray (`as? NSArray`, enumeration, `as? [CMLogItem]`) at no
///   cost per sample;
/// - it conforms to the standard library's `_NSSwiftValue` (the protocol Foundation's own value
///   boxes adopt on platforms without Objective-C), so the runtime's cast first tries to unbox
///   `value` — the typed Swift array — and a cast to exactly that type is a copy of one
///   reference. Any other cast falls back to NSArray bridging, element by element, with the
///   usual result (`as? [CMRecordedRotationRateData]` is nil for accelerometer samples). If a
///   future toolchain drops that protocol, delete the conformance: only the speed changes.
///
/// Immutable (every stored property is a `let` of immutable sample objects), so it may cross
/// queues inside an `SRFetchResult`, although NSArray itself is not `Sendable`.
final class SampleArray: NSArray, _NSSwiftValue {
    /// The samples as the Swift array they were made in (`[CMRecordedAccelerometerData]`, …).
    let value: Any
    private let sampleCount: Int
    /// Element access without generic metadata lookups: NSArray calls `object(at:)`
    /// dynamically, where a generic class's unspecialized body would look up `Array<Sample>`'s
    /// metadata on every call; this closure is made in specialized code (`SampleList`).
    private let element: (Int) -> AnyObject

    init(samples: SampleList) {
        value = samples.value
        sampleCount = samples.count
        element = samples.element
        super.init()
    }

    /// `_NSSwiftValue`'s box initializer (the runtime does not call it; Foundation boxes with its
    /// own class): an array of objects becomes those elements, anything else one element.
    init(_ value: Any) {
        self.value = value
        let objects = (value as? [AnyObject]) ?? [value as AnyObject]
        sampleCount = objects.count
        element = { objects[$0] }
        super.init()
    }

    static var null: AnyObject { NSNull() }

    required init(objects: UnsafePointer<AnyObject>?, count: Int) {
        let objects = Array(UnsafeBufferPointer(start: objects, count: objects == nil ? 0 : count))
        value = objects
        sampleCount = objects.count
        element = { objects[$0] }
        super.init()
    }

    required init?(coder: NSCoder) { nil }

    required convenience init(arrayLiteral elements: Any...) {
        self.init(elements)
    }

    override var count: Int { sampleCount }

    override func object(at index: Int) -> Any {
        precondition(index >= 0 && index < sampleCount, "index \(index) of \(sampleCount)")
        return element(index)
    }
}

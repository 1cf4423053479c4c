/// How stored value columns become a batch layout's columns in SensorKit's units, for the layouts
/// whose columns are linear in the stored ones (motion and the BLE layouts): each stored column
/// is read as a physical value, and each layout column is a sum of physical values times
/// coefficients, divided by a divisor. The daemon maps plain batches with it, and a `chunk` frame
/// carries it so a client maps the stored chunk itself (docs/protocol.md §5.3): both sides run
/// this one implementation, so both give the same doubles bit for bit.
///
/// Evaluation, in exactly this order of IEEE-754 double operations:
///
///     output = NaN                                       (no terms)
///     when every term reads an integer column (counts), an affine map of the counts:
///         aᵢ = (kᵢ · scaleᵢ) / divisor,   b = ((k₀·offset₀ + k₁·offset₁) + …) / divisor
///         output = ((b + a₀·Double(count₀)) + a₁·Double(count₁)) + …   (terms with aᵢ = 0 left out)
///     otherwise, with physical(c) = the stored bits as a Double (float column)
///                                 = Double(count) * scale + offset (integer column):
///         output = physical(c)                           (one term, coefficient 1, divisor 1)
///                = ((k₀·p₀ + k₁·p₁) + k₂·p₂ …) / divisor  (left to right)
///
/// The affine form costs one multiply and add per term and sample, and none for the zeros of a
/// mount matrix; the general form is for float columns, whose bits must pass through unchanged.
public struct ColumnMapping: Hashable, Sendable {
    /// How one stored column is read.
    public struct Source: Hashable, Sendable {
        public var isFloat: Bool
        public var scale: Double
        public var offset: Double

        public init(isFloat: Bool, scale: Double = 1, offset: Double = 0) {
            self.isFloat = isFloat
            self.scale = scale
            self.offset = offset
        }
    }

    /// One stored column's share of a layout column.
    public struct Term: Hashable, Sendable {
        public var source: Int
        public var coefficient: Double

        public init(source: Int, coefficient: Double) {
            self.source = source
            self.coefficient = coefficient
        }
    }

    /// One layout column.
    public struct Output: Hashable, Sendable {
        public var terms: [Term]
        public var divisor: Double

        public init(terms: [Term], divisor: Double = 1) {
            self.terms = terms
            self.divisor = divisor
        }

        /// A stored column's physical value as it is.
        public static func copy(_ source: Int) -> Output { Output(terms: [Term(source: source, coefficient: 1)]) }
        /// No stored column: NaN.
        public static let missing = Output(terms: [])

        var isCopy: Bool { terms.count == 1 && terms[0].coefficient == 1 && divisor == 1 }
    }

    public var sources: [Source]
    public var outputs: [Output]

    public init(sources: [Source], outputs: [Output]) {
        precondition(
            outputs.allSatisfy { $0.terms.allSatisfy { sources.indices.contains($0.source) } },
            "a term names a stored column that does not exist")
        self.sources = sources
        self.outputs = outputs
    }

    /// Writes layout column `output` for `count` samples to `destination` (8-byte little-endian
    /// doubles, no alignment required), reading `stored[c]` (at least `count` values each).
    /// One plain pass per term over the output, which the compiler vectorises; the rounding is
    /// that of the single expression above, since every intermediate is a stored double.
    public func write(output: Int, count: Int, stored: [UnsafeBufferPointer<Int64>], to destination: UnsafeMutableRawPointer) {
        let spec = outputs[output]
        precondition(stored.count == sources.count && stored.allSatisfy { $0.count >= count })
        @inline(__always) func store(_ i: Int, _ value: Double) {
            destination.storeBytes(of: value, toByteOffset: i &* 8, as: Double.self)
        }
        @inline(__always) func load(_ i: Int) -> Double {
            destination.loadUnaligned(fromByteOffset: i &* 8, as: Double.self)
        }
        guard let first = spec.terms.first else {
            for i in 0..<count { store(i, .nan) }
            return
        }
        if spec.terms.allSatisfy({ !sources[$0.source].isFloat }) {
            writeAffine(spec, count: count, stored: stored, to: destination)
            return
        }
        writePhysical(first.source, count: count, stored: stored, to: destination)
        if spec.isCopy { return }
        let k0 = first.coefficient
        for i in 0..<count { store(i, k0 * load(i)) }
        for term in spec.terms.dropFirst() {
            let k = term.coefficient, source = sources[term.source], values = stored[term.source]
            if source.isFloat {
                for i in 0..<count { store(i, load(i) + k * Double(bitPattern: UInt64(bitPattern: values[i]))) }
            } else {
                let (scale, offset) = (source.scale, source.offset)
                for i in 0..<count { store(i, load(i) + k * (Double(values[i]) * scale + offset)) }
            }
        }
        let divisor = spec.divisor
        if divisor != 1 {
            for i in 0..<count { store(i, load(i) / divisor) }
        }
    }

    /// Layout column `output` for `count` samples as a new array.
    public func column(_ output: Int, count: Int, stored: [UnsafeBufferPointer<Int64>]) -> [Double] {
        [Double](unsafeUninitializedCapacity: count) { buffer, initialized in
            if let base = buffer.baseAddress {
                write(output: output, count: count, stored: stored, to: UnsafeMutableRawPointer(base))
            }
            initialized = count
        }
    }

    /// Runs `body` with buffers over `range` of each array (valid only inside `body`).
    public static func withBuffers<Result>(
        _ arrays: [[Int64]], _ range: Range<Int>, _ body: ([UnsafeBufferPointer<Int64>]) throws -> Result
    ) rethrows -> Result {
        func nest(_ index: Int, _ collected: [UnsafeBufferPointer<Int64>]) throws -> Result {
            guard index < arrays.count else { return try body(collected) }
            return try arrays[index].withUnsafeBufferPointer { values in
                try nest(index + 1, collected + [UnsafeBufferPointer(rebasing: values[range])])
            }
        }
        return try nest(0, [])
    }

    /// The affine form (integer columns only): the first term's pass writes b + a₀·count₀, each
    /// further term's pass adds its own. Counts within ±2^51 (every sensor's) convert to Double by
    /// adding them to the bits of 1.5·2^52 and subtracting that double again, which gives exactly
    /// Double(count) and, unlike the conversion instruction, vectorises on baseline x86-64. The
    /// same pass ors together (count + 2^51) >> 52, zero exactly when every count lies in
    /// [−2^51, 2^51); when one does not, the whole column is written again with the conversion
    /// instruction. One pass per term, not a check and then a conversion: the counts are read
    /// once, which matters as a chunk's columns (480 KB each at 60 000 samples) outgrow the cache.
    private func writeAffine(
        _ spec: Output, count: Int, stored: [UnsafeBufferPointer<Int64>], to destination: UnsafeMutableRawPointer
    ) {
        var b = 0.0
        for (index, term) in spec.terms.enumerated() {
            let product = term.coefficient * sources[term.source].offset
            b = index == 0 ? product : b + product
        }
        b = b / spec.divisor
        let terms = spec.terms.compactMap { term -> AffineTerm? in
            let a = (term.coefficient * sources[term.source].scale) / spec.divisor
            return a == 0 ? nil : AffineTerm(a: a, values: stored[term.source])
        }
        if !Self.writeAffine(b: b, terms: terms, count: count, to: destination, exactConversion: false) {
            _ = Self.writeAffine(b: b, terms: terms, count: count, to: destination, exactConversion: true)
        }
    }

    private struct AffineTerm {
        let a: Double
        let values: UnsafeBufferPointer<Int64>
    }

    /// The passes of `writeAffine`; without `exactConversion`, returns false (and has written
    /// wrong values) when some count lies outside ±2^51.
    @inline(__always)
    private static func writeAffine(
        b: Double, terms: [AffineTerm], count: Int, to destination: UnsafeMutableRawPointer, exactConversion: Bool
    ) -> Bool {
        var outside: UInt64 = 0
        @inline(__always) func pass(_ values: UnsafeBufferPointer<Int64>, _ body: (Int, Double) -> Void) {
            if exactConversion {
                for i in 0..<count { body(i, Double(values[i])) }
                return
            }
            let magic = 6_755_399_441_055_744.0  // 1.5·2^52
            let magicBits = Int64(bitPattern: magic.bitPattern)
            for i in 0..<count {
                let value = values[i]
                outside |= UInt64(bitPattern: value &+ (1 << 51)) &>> 52
                body(i, Double(bitPattern: UInt64(bitPattern: value &+ magicBits)) - magic)
            }
        }
        @inline(__always) func store(_ i: Int, _ value: Double) {
            destination.storeBytes(of: value, toByteOffset: i &* 8, as: Double.self)
        }
        guard let first = terms.first else {
            for i in 0..<count { store(i, b) }
            return true
        }
        let a0 = first.a
        pass(first.values) { i, x in store(i, b + a0 * x) }
        for term in terms.dropFirst() {
            let a = term.a
            pass(term.values) { i, x in store(i, destination.loadUnaligned(fromByteOffset: i &* 8, as: Double.self) + a * x) }
        }
        return outside == 0
    }

    private func writePhysical(
        _ column: Int, count: Int, stored: [UnsafeBufferPointer<Int64>], to destination: UnsafeMutableRawPointer
    ) {
        let source = sources[column], values = stored[column]
        if source.isFloat {
            for i in 0..<count { destination.storeBytes(of: values[i], toByteOffset: i &* 8, as: Int64.self) }
        } else {
            let (scale, offset) = (source.scale, source.offset)
            for i in 0..<count {
                destination.storeBytes(of: Double(values[i]) * scale + offset, toByteOffset: i &* 8, as: Double.self)
            }
        }
    }
}

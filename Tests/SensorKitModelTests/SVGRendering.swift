import Foundation
import FoundationXML

/// A chart's SVG as the tests see it: parsed by libxml2 (so it must be well-formed XML) into its
/// elements, and rendered to pixels with Debian's rsvg-convert, read back with netpbm's pngtopam
/// (both from scripts/install-deps.sh). The PNGs are kept for a person to look at, in
/// `$SENSORKIT_TEST_ARTEFACTS/report-pictures` (default: the temporary directory).
enum SVGRendering {
    struct Element {
        var name: String
        var attributes: [String: String]
        var text = ""
        func number(_ key: String) -> Double { attributes[key].flatMap(Double.init) ?? .nan }
    }

    static func elements(_ svg: String) throws -> [Element] {
        final class Collector: NSObject, XMLParserDelegate {
            var elements: [Element] = []
            var open: [Int] = []
            func parser(
                _ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?,
                attributes: [String: String] = [:]
            ) {
                open.append(elements.count)
                elements.append(Element(name: name, attributes: attributes))
            }
            func parser(_ parser: XMLParser, foundCharacters string: String) {
                if let last = open.last { elements[last].text += string }
            }
            func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
                _ = open.popLast()
            }
        }
        let parser = XMLParser(data: Data(svg.utf8))
        let collector = Collector()
        parser.delegate = collector
        guard parser.parse() else { throw Failure(description: "not well-formed: \(String(describing: parser.parserError))") }
        return collector.elements
    }

    static var artefacts: String {
        let base = ProcessInfo.processInfo.environment["SENSORKIT_TEST_ARTEFACTS"] ?? NSTemporaryDirectory()
        return base + "/report-pictures"
    }

    /// Renders `svg` to `artefacts/name.png` and reads the pixels back.
    static func render(_ svg: String, name: String) throws -> PAMImage {
        try FileManager.default.createDirectory(atPath: artefacts, withIntermediateDirectories: true)
        let base = artefacts + "/" + name
        try svg.write(toFile: base + ".svg", atomically: true, encoding: .utf8)
        try run("/usr/bin/rsvg-convert", ["-o", base + ".png", base + ".svg"])
        return try PAMImage(try run("/usr/bin/pngtopam", ["-alphapam", base + ".png"]))
    }

    @discardableResult
    static func run(_ tool: String, _ arguments: [String]) throws -> Data {
        guard FileManager.default.isExecutableFile(atPath: tool) else {
            throw Failure(description: "\(tool) is missing: run scripts/install-deps.sh")
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw Failure(description: "\(tool) exited \(process.terminationStatus)") }
        return data
    }

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// A netpbm PAM image (P7), 8-bit samples.
    struct PAMImage {
        var width = 0, height = 0, depth = 0
        var pixels: [UInt8] = []

        init(_ data: Data) throws {
            let bytes = [UInt8](data)
            guard let end = bytes.firstRange(of: Array("ENDHDR\n".utf8)) else { throw Failure(description: "not a PAM image") }
            for line in String(decoding: bytes[..<end.lowerBound], as: UTF8.self).split(separator: "\n") {
                let words = line.split(separator: " ")
                guard words.count == 2, let value = Int(words[1]) else { continue }
                switch words[0] {
                case "WIDTH": width = value
                case "HEIGHT": height = value
                case "DEPTH": depth = value
                default: break
                }
            }
            pixels = Array(bytes[end.upperBound...])
            guard depth >= 3, pixels.count >= width * height * depth else { throw Failure(description: "short PAM image") }
        }

        func hex(_ x: Int, _ y: Int) -> String {
            let offset = (y * width + x) * depth
            return "#" + pixels[offset..<offset + 3].map { String(format: "%02x", $0) }.joined()
        }

        /// The leftmost and rightmost x in rows `ys` whose pixel is none of `background`.
        func ink(xs: Range<Int>, ys: Range<Int>, background: Set<String>) -> ClosedRange<Int>? {
            var low = Int.max, high = Int.min
            for y in ys where y >= 0 && y < height {
                for x in xs where x >= 0 && x < width && !background.contains(hex(x, y)) {
                    low = min(low, x)
                    high = max(high, x)
                }
            }
            return low <= high ? low...high : nil
        }
    }
}

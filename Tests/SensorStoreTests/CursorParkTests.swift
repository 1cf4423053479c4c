import Foundation
import SensorKitModel
import Testing

@testable import SensorStore

/// `SampleCursor.park`: a cursor that ends its read transaction while its reader waits must go on
/// with exactly the samples it would have returned without parking (docs/store.md).
@Suite struct CursorParkTests {
    @Test func aParkedCursorReturnsWhatItWouldHaveEvenWhenItsPiecesAreSealedMeanwhile() throws {
        // 2,000 samples: six sealed chunks of 300, and 200 in pieces of the chunk still open.
        let (fixture, _) = try ChunkHandoverTests.filledStore(seconds: 20)
        let expected = try fixture.fetch()
        let stream = try fixture.opened.register(.accelerometer)
        let cursor = try fixture.opened.samples(sensor: .accelerometer, device: "host", from: .min, to: .max)
        var rows: [StoredRow] = []
        var parks = 0
        while let block = try cursor.next() {
            for index in 0..<block.count {
                rows.append(
                    StoredRow(
                        time: block.sensorTime(at: index), receive: block.receiveTime(at: index),
                        values: block.values(at: index)))
            }
            try cursor.park()
            parks += 1
            if parks == 1 {
                // While the reader waits, the writer goes on: the open chunk fills up and is
                // sealed, its pieces replaced by a chunk under a new id.
                let more = referenceAccelerometer(seconds: 4, start: expected.last!.time + 10_000_000, seed: 9)
                StoreTests.append(fixture, stream, times: more.times, values: more.axes)
                fixture.clock.advance(seconds: 10_000)
                try fixture.opened.flush()
                #expect(try fixture.fetch().count == expected.count + more.times.count)
            }
        }
        #expect(parks > 1)
        #expect(rows.count == expected.count)
        #expect(rows == expected)
    }
}

import Dispatch
import Foundation
import SensorTestKit
import Synchronization
import Testing

@testable import SensorKit

/// The client's ordered delivery: deliveries run one at a time, in arrival order, however long
/// each item's preparation takes on the worker threads.
@Suite struct OrderedDeliveryTests {
    @Test(arguments: [1 as UInt64, 2, 3])
    func deliveriesKeepArrivalOrderWhilePreparationsOverlap(seed: UInt64) {
        let delivery = OrderedDelivery(label: "test.delivery")
        let delivered = Mutex<[Int]>([])
        let running = Mutex((now: 0, most: 0))
        let done = DispatchSemaphore(value: 0)
        var random = SeededGenerator(seed: seed)
        let total = 400
        for item in 0..<total {
            let record: @Sendable () -> Void = {
                running.withLock {
                    $0.now += 1; $0.most = max($0.most, $0.now)
                }
                delivered.withLock { $0.append(item) }
                running.withLock { $0.now -= 1 }
                if item == total - 1 { done.signal() }
            }
            if random.next() % 3 == 0 {
                delivery.deliver(record)  // ready at once (a message, a plain batch)
            } else {
                let pause = UInt32(random.next() % 300)  // a chunk decoding for up to 0.3 ms
                delivery.prepare {
                    usleep(pause)
                    return record
                }
            }
        }
        #expect(done.wait(timeout: .now() + 20) == .success)
        #expect(delivered.withLock { $0 } == Array(0..<total))
        #expect(running.withLock { $0.most } == 1, "deliveries never overlap")
    }
}

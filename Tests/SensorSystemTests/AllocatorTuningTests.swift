import Glibc
import SensorSystem
import Testing

@Suite struct AllocatorTuningTests {
    @Test func whoeverTunedMallocBeforeUsIsLeftAlone() {
        #expect(AllocatorTuning.reasonToLeaveAlone([:]) == nil)
        #expect(AllocatorTuning.reasonToLeaveAlone(["GLIBC_TUNABLES": "glibc.pthread.rseq=0"]) == nil)
        #expect(AllocatorTuning.reasonToLeaveAlone(["SENSORKIT_MALLOC": "default"]) == "SENSORKIT_MALLOC=default")
        #expect(AllocatorTuning.reasonToLeaveAlone(["GLIBC_TUNABLES": "glibc.malloc.trim_threshold=0"]) == "GLIBC_TUNABLES")
        #expect(AllocatorTuning.reasonToLeaveAlone(["MALLOC_TRIM_THRESHOLD_": "1"]) == "MALLOC_TRIM_THRESHOLD_")
    }

    @Test func aLibraryClientTunesOnlyWhenTheAppOptsIn() {
        #expect(AllocatorTuning.forLibraryClient(environment: [:]) == nil)
        #expect(AllocatorTuning.forLibraryClient(environment: ["SENSORKIT_MALLOC": "default"]) == nil)
        #expect(AllocatorTuning.forLibraryClient(environment: ["SENSORKIT_MALLOC": "bulk"]) != nil)
    }

    /// AddressSanitizer replaces malloc, and its `mallopt` refuses every setting.
    static let underAddressSanitizer = dlsym(nil, "__asan_init") != nil

    @Test(.disabled(if: underAddressSanitizer, "AddressSanitizer's malloc refuses mallopt"))
    func theTuningIsAppliedOncePerProcess() {
        let first = AllocatorTuning.forBulkData()
        #expect(first != .refused, "glibc accepts both thresholds")
        #expect(AllocatorTuning.forBulkData(environment: ["SENSORKIT_MALLOC": "default"]) == first)
    }
}

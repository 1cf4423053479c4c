import SensorSystem

/// The opt-in, for an app that fetches days of samples, to let the client library keep
/// chunk-sized memory in the heap (`AllocatorTuning`): decoded batches are megabytes, and with
/// glibc's defaults every one is a fresh `mmap` faulted in page by page and handed back on free.
/// The library never does this by itself, because the allocator is the app's
/// (docs/configuration.md, "Memory allocator"). Setting `SENSORKIT_MALLOC=bulk` in the app's
/// environment has the same effect without code.
public enum BulkFetchMemory {
    /// Raises glibc's mmap and trim thresholds for this process, once; true when glibc took them.
    /// Left alone, and false, when malloc is already tuned through the environment or
    /// `SENSORKIT_MALLOC=default` is set.
    @discardableResult
    public static func keep() -> Bool {
        AllocatorTuning.forBulkData() == .tuned
    }
}

import SensorKitModel

/// Since when each sensor that some app once wanted has been wanted by none (every stake released:
/// stopped, or consent turned off). The pipeline writes that time as a `noInterestedClients`
/// record only when recording resumes; until then `health` says it with this instant, so the
/// day picture shows "no app wanted it" instead of an unexplained gap. Kept in memory: after a
/// daemon restart a sensor nobody wants counts from the restart (the time before it, while the
/// daemon was down, stays unexplained).
struct UnwantedSensors: Sendable {
    private(set) var since: [SRSensor: Int64] = [:]

    /// `wanted`: the sensors with an active stake; `everWanted`: those with any stake. A sensor
    /// nobody ever wanted is not "unwanted since" anything: it is not yet recording.
    mutating func update(wanted: Set<SRSensor>, everWanted: Set<SRSensor>, at time: Int64) {
        for sensor in wanted { since[sensor] = nil }
        for sensor in everWanted.subtracting(wanted) where since[sensor] == nil { since[sensor] = time }
        for sensor in since.keys where !everWanted.contains(sensor) { since[sensor] = nil }
    }
}

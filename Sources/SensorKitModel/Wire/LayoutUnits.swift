/// The unit of each batch column in SensorKit's terms (docs/protocol.md §5.2), for people and
/// for tools that label channels (`sensorkitctl watch`, the Python package's LSL outlet keeps the
/// same table): "" for a count, a code or a flag.
public enum LayoutUnits {
    public static func unit(of column: String, layout: BatchLayout, sensor: SRSensor) -> String {
        switch (layout, column) {
        case (.motion, _): sensor == .rotationRate ? "rad/s" : "g"
        case (.pressure, "pressure"): "kPa"
        case (.pressure, "temperature"): "°C"
        case (.ambientLight, "lux"): "lx"
        case (.heartRate, "bpm"): "beats/min"
        case (.electrocardiogram, "microvolts"): "µV"
        case (.electrocardiogram, "frequency"): "Hz"
        case (.keyboardMetrics, "duration"), (.keyboardMetrics, "typingDuration"): "s"
        case (.keyboardMetrics, "typingSpeed"): "characters/s"
        case (_, "endTime"), (_, "sessionStart"): "SR ns"
        default: ""
        }
    }
}

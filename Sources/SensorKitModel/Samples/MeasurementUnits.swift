import Foundation

extension Measurement where UnitType: Dimension {
    /// This measurement in `unit`: itself when already there, converted otherwise. Sample classes
    /// hold every measurement in the unit Apple's getters use (kPa, °C, lux, µV, Hz, nm, g, mm),
    /// so `.value` means the same on Linux as on iOS whatever unit a source built it with.
    func expressed(in unit: UnitType) -> Measurement<UnitType> {
        self.unit == unit ? self : converted(to: unit)
    }
}

// `import SensorKit` gives study code every SensorKit name, as Apple's framework does.
@_exported import Foundation
@_exported import SensorKitModel

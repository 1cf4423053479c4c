// The emulated peripheral lives in Sources/WearableEmulation (sensorkit-wearable serves it too);
// tests keep importing it by this name.
@_exported import WearableEmulation

import Glibc
import WearableEmulation

// Emulated BLE wearables for the demo rig and outside use: `sensorkit-wearable --help`.
exit(WearableEmulatorCommand.run(Array(CommandLine.arguments.dropFirst())))

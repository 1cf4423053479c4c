// System-library shim: libevdev's header, nothing else (the keyboard bridge's typed wrapper is
// Sources/KeyboardBridge/EvdevDevice.swift).
#include <libevdev/libevdev.h>

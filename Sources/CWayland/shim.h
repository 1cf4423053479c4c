// System-library shim: libwayland-client's header (the typed wrapper is
// Sources/WaylandBridge/Wayland/WaylandConnection.swift; the wlr protocols' glue is CWaylandProtocols).
#include <wayland-client.h>

// Swift imports `extern const struct wl_interface` as a constant it may copy, but
// wl_registry_bind needs the interface's own address: one accessor says which.
static inline const struct wl_interface *cwl_output_interface(void) { return &wl_output_interface; }

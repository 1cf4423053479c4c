// System-library shim: the sd-bus headers of libsystemd, nothing else (see docs/dbus.md).
#include <systemd/sd-bus.h>

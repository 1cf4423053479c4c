// System-library shim: the libudev headers, nothing else (see docs/design-notes).
#include <libudev.h>

// System-library shim: the libiio headers, nothing else (see docs/design-notes).
#include <iio.h>

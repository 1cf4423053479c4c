// System-library shim: the libzstd headers, nothing else (see docs/design-notes).
#include <zstd.h>

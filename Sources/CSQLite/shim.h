// System-library shim: the sqlite3 headers, nothing else (see docs/design-notes).
#include <sqlite3.h>

// System-library shim: libpq's header, nothing else (Debian libpq-dev; wrapped in SensorExport/PostgresConnection.swift).
#include <libpq-fe.h>

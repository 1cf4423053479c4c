// CRC-32C with the CPU's own instruction (SSE 4.2 `crc32`), which the Swift compiler does not
// emit for baseline x86-64: three streams side by side on long buffers (see crc32c.c). One
// function, nothing more; SensorChunks falls back to its tables where the CPU has no crc32.
#ifndef CCHECKSUM_H
#define CCHECKSUM_H
#include <stddef.h>
#include <stdint.h>

/// 1 when this CPU has the crc32 instruction (checked once).
int cks_crc32c_hardware_available(void);

/// Continues a CRC-32C: `crc` is the running value (start with 0xFFFFFFFF, finish by xor with
/// 0xFFFFFFFF). Only call when `cks_crc32c_hardware_available()` said 1.
uint32_t cks_crc32c_update(uint32_t crc, const void *bytes, size_t count);

#endif

#include "CChecksum.h"
#include <pthread.h>
#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

int cks_crc32c_hardware_available(void) {
    static int available = -1;
    if (available < 0) {
        __builtin_cpu_init();
        available = __builtin_cpu_supports("sse4.2") ? 1 : 0;
    }
    return available;
}

// The crc32 instruction takes three cycles but can start one every cycle, so one running CRC
// uses a third of it. Long buffers are therefore cut into strides of three blocks whose CRCs run
// side by side (the second and third from zero), then joined: by linearity,
//   crc(s, A‖B‖C) = shift(crc(s, A), |B|+|C|) ⊕ shift(crc(0, B), |C|) ⊕ crc(0, C),
// where shift(c, n) is the register after n zero bytes — a linear map of c, applied as four
// table lookups (one per byte of c) for the two fixed distances used.
enum { block = 4096 };

// shift_tables[d][k][b]: the register after (d + 1) blocks of zeros, started from b << 8k.
static uint32_t shift_tables[2][4][256];
static pthread_once_t shift_tables_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2")))
static uint32_t zeros(uint32_t crc, size_t count) {
    uint64_t c = crc;
    for (size_t i = 0; i < count; i += 8) c = _mm_crc32_u64(c, 0);
    return (uint32_t)c;
}

static uint32_t shift(int distance, uint32_t c) {
    const uint32_t (*t)[256] = shift_tables[distance];
    return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

static void build_shift_tables(void) {
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) shift_tables[0][k][b] = zeros(b << (8 * k), block);
    }
    // Two blocks: one block's shift applied twice.
    for (int k = 0; k < 4; k++) {
        for (uint32_t b = 0; b < 256; b++) shift_tables[1][k][b] = shift(0, shift_tables[0][k][b]);
    }
}

__attribute__((target("sse4.2")))
uint32_t cks_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    uint64_t c = crc;
    if (count >= 3 * block) {
        pthread_once(&shift_tables_once, build_shift_tables);
        while (count >= 3 * block) {
            uint64_t b = 0, d = 0;
            for (size_t i = 0; i < block; i += 8) {
                uint64_t x, y, z;
                memcpy(&x, p + i, 8);
                memcpy(&y, p + block + i, 8);
                memcpy(&z, p + 2 * block + i, 8);
                c = _mm_crc32_u64(c, x);
                b = _mm_crc32_u64(b, y);
                d = _mm_crc32_u64(d, z);
            }
            c = shift(1, (uint32_t)c) ^ shift(0, (uint32_t)b) ^ (uint32_t)d;
            p += 3 * block;
            count -= 3 * block;
        }
    }
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        c = _mm_crc32_u64(c, word);
        p += 8;
        count -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (count > 0) {
        c32 = _mm_crc32_u8(c32, *p);
        p += 1;
        count -= 1;
    }
    return c32;
}
#else
int cks_crc32c_hardware_available(void) { return 0; }
uint32_t cks_crc32c_update(uint32_t crc, const void *bytes, size_t count) { (void)bytes; (void)count; return crc; }
#endif

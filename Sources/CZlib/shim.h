#ifndef DATAINGEST_CZLIB_SHIM_H
#define DATAINGEST_CZLIB_SHIM_H
#include <zlib.h>

/// deflateInit2 and inflateInit2 are macros that pass the library version and
/// the stream size; Swift cannot call macros, so these inline functions do.
static inline int dataingest_deflateInit2(z_streamp strm, int level, int method,
                                          int windowBits, int memLevel, int strategy) {
    return deflateInit2_(strm, level, method, windowBits, memLevel, strategy,
                         ZLIB_VERSION, (int)sizeof(z_stream));
}

static inline int dataingest_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2_(strm, windowBits, ZLIB_VERSION, (int)sizeof(z_stream));
}

// CRC-32C (Castagnoli) with the x86-64 SSE4.2 `crc32` instruction, for the
// frame checksums of segment format version 2 (Docs/SegmentFormat.md); next
// to zlib's CRC-32 (version 1's), which is why it lives in this module.
// Swift cannot name the instruction, so these inline functions do; the
// portable table-driven fallback is in Swift (IngestSupport's CRC32C), and
// `dataingest_crc32c_hardware_available` picks between them at run time.
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__)
#include <cpuid.h>

/// 1 when the CPU has SSE4.2 (CPUID leaf 1, ECX bit 20), else 0.
static inline int dataingest_crc32c_hardware_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & (1u << 20)) != 0;
}

/// Continues the CRC-32C `crc` (0 to start; the value is pre- and
/// post-inverted as in iSCSI and ext4) over `count` bytes at `bytes`.
/// Only call it when `dataingest_crc32c_hardware_available()` is 1.
__attribute__((target("sse4.2")))
static inline uint32_t dataingest_crc32c_hardware(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = (const unsigned char *)bytes;
    uint64_t state = (uint32_t)~crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        state = __builtin_ia32_crc32di(state, word);
        p += 8;
        count -= 8;
    }
    uint32_t small = (uint32_t)state;
    if (count >= 4) {
        uint32_t word;
        memcpy(&word, p, 4);
        small = __builtin_ia32_crc32si(small, word);
        p += 4;
        count -= 4;
    }
    while (count > 0) {
        small = __builtin_ia32_crc32qi(small, *p);
        p += 1;
        count -= 1;
    }
    return ~small;
}
#else
/// No hardware CRC-32C on this architecture here: always 0.
static inline int dataingest_crc32c_hardware_available(void) { return 0; }

/// Never called where `dataingest_crc32c_hardware_available()` is 0.
static inline uint32_t dataingest_crc32c_hardware(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}
#endif

// CRC-32 (zlib's, the gzip trailer's) by folding 16 bytes at a time with
// carry-less multiplication (PCLMULQDQ), as in Intel's "Fast CRC
// Computation for Generic Polynomials Using PCLMULQDQ Instruction" and
// Chromium's zlib (crc32_simd.c), written with Clang's vector extensions
// and builtins so that this header needs no intrinsics header. The portable
// path is zlib's crc32_z; `dataingest_crc32_fold_available` picks.
#if defined(__x86_64__)
typedef long long dataingest_v2di __attribute__((vector_size(16)));
typedef int dataingest_v4si __attribute__((vector_size(16)));

/// 1 when the CPU has PCLMULQDQ (CPUID leaf 1, ECX bit 1), else 0.
static inline int dataingest_crc32_fold_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & (1u << 1)) != 0;
}

__attribute__((target("pclmul")))
static inline dataingest_v2di dataingest_crc32_load(const unsigned char *p) {
    dataingest_v2di v;
    memcpy(&v, p, 16);
    return v;
}

/// Folds `count` bytes (a multiple of 16, at least 64) into the CRC-32
/// register `state` (the inverted form: ~crc on entry, ~result on exit).
/// Only call it when `dataingest_crc32_fold_available()` is 1.
__attribute__((target("pclmul")))
static inline uint32_t dataingest_crc32_fold(uint32_t state, const void *bytes, size_t count) {
    const unsigned char *buf = (const unsigned char *)bytes;
    const dataingest_v2di k1k2 = {0x0154442bd4LL, 0x01c6e41596LL};
    const dataingest_v2di k3k4 = {0x01751997d0LL, 0x00ccaa009eLL};
    const long long k5 = 0x0163cd6124LL;
    const dataingest_v2di poly = {0x01db710641LL, 0x01f7011641LL};
    dataingest_v2di x1 = dataingest_crc32_load(buf);
    dataingest_v2di x2 = dataingest_crc32_load(buf + 16);
    dataingest_v2di x3 = dataingest_crc32_load(buf + 32);
    dataingest_v2di x4 = dataingest_crc32_load(buf + 48);
    x1 ^= (dataingest_v2di)(dataingest_v4si){(int)state, 0, 0, 0};
    buf += 64;
    count -= 64;
    while (count >= 64) {
        dataingest_v2di x5 = __builtin_ia32_pclmulqdq128(x1, k1k2, 0x00);
        dataingest_v2di x6 = __builtin_ia32_pclmulqdq128(x2, k1k2, 0x00);
        dataingest_v2di x7 = __builtin_ia32_pclmulqdq128(x3, k1k2, 0x00);
        dataingest_v2di x8 = __builtin_ia32_pclmulqdq128(x4, k1k2, 0x00);
        x1 = __builtin_ia32_pclmulqdq128(x1, k1k2, 0x11) ^ x5 ^ dataingest_crc32_load(buf);
        x2 = __builtin_ia32_pclmulqdq128(x2, k1k2, 0x11) ^ x6 ^ dataingest_crc32_load(buf + 16);
        x3 = __builtin_ia32_pclmulqdq128(x3, k1k2, 0x11) ^ x7 ^ dataingest_crc32_load(buf + 32);
        x4 = __builtin_ia32_pclmulqdq128(x4, k1k2, 0x11) ^ x8 ^ dataingest_crc32_load(buf + 48);
        buf += 64;
        count -= 64;
    }
    // Four lanes into one.
    x1 = __builtin_ia32_pclmulqdq128(x1, k3k4, 0x11) ^ __builtin_ia32_pclmulqdq128(x1, k3k4, 0x00) ^ x2;
    x1 = __builtin_ia32_pclmulqdq128(x1, k3k4, 0x11) ^ __builtin_ia32_pclmulqdq128(x1, k3k4, 0x00) ^ x3;
    x1 = __builtin_ia32_pclmulqdq128(x1, k3k4, 0x11) ^ __builtin_ia32_pclmulqdq128(x1, k3k4, 0x00) ^ x4;
    while (count >= 16) {
        x1 = __builtin_ia32_pclmulqdq128(x1, k3k4, 0x11) ^ __builtin_ia32_pclmulqdq128(x1, k3k4, 0x00)
            ^ dataingest_crc32_load(buf);
        buf += 16;
        count -= 16;
    }
    // 128 bits to 64, then Barrett reduction to 32.
    const dataingest_v4si mask = {-1, 0, -1, 0};
    dataingest_v2di x2b = __builtin_ia32_pclmulqdq128(x1, k3k4, 0x10);
    x1 = (dataingest_v2di){x1[1], 0} ^ x2b;
    dataingest_v4si s1 = (dataingest_v4si)x1;
    dataingest_v2di shifted = (dataingest_v2di)(dataingest_v4si){s1[1], s1[2], s1[3], 0};
    x1 = (dataingest_v2di)((dataingest_v4si)x1 & mask);
    x1 = __builtin_ia32_pclmulqdq128(x1, (dataingest_v2di){k5, 0}, 0x00) ^ shifted;
    dataingest_v2di t = (dataingest_v2di)((dataingest_v4si)x1 & mask);
    t = __builtin_ia32_pclmulqdq128(t, poly, 0x10);
    t = (dataingest_v2di)((dataingest_v4si)t & mask);
    t = __builtin_ia32_pclmulqdq128(t, poly, 0x00);
    x1 ^= t;
    return (uint32_t)((dataingest_v4si)x1)[1];
}
#else
/// No carry-less multiplication here: always 0.
static inline int dataingest_crc32_fold_available(void) { return 0; }

/// Never called where `dataingest_crc32_fold_available()` is 0.
static inline uint32_t dataingest_crc32_fold(uint32_t state, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return state;
}
#endif
#endif

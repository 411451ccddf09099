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
#endif

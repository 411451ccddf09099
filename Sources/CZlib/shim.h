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
#endif

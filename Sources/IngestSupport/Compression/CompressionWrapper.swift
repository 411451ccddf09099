/// The container around deflate data: gzip (RFC 1952, segment files and
/// DataIngest uploads) or zlib (RFC 1950, Realm's sync protocol).
///
/// ```swift
/// let inflater = try GzipInflater(limits: GzipLimits(maxOutputBytes: 16 << 20), wrapper: .zlib)
/// ```
package enum CompressionWrapper: Sendable, Hashable {
    /// gzip: a 10-byte header, deflate data, CRC-32 and length.
    case gzip
    /// zlib: a 2-byte header, deflate data, Adler-32.
    case zlib

    /// zlib's `windowBits` for this wrapper (15: a 32 KiB window).
    var windowBits: Int32 {
        switch self {
        case .gzip: return 15 + 16
        case .zlib: return 15
        }
    }

    /// The name used in error messages.
    var name: String {
        switch self {
        case .gzip: return "gzip"
        case .zlib: return "zlib"
        }
    }
}

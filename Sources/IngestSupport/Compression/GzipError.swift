/// An error from gzip compression or decompression.
///
/// ```swift
/// do { _ = try Gzip.decompress(body, limits: .init(maxOutputBytes: 1 << 20)) }
/// catch let error as GzipError where error.code == .limitExceeded { /* 413 */ }
/// ```
package struct GzipError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as an extensible code.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        package let rawValue: String
        /// Creates a code with the given name.
        package init(_ rawValue: String) { self.rawValue = rawValue }
        package var description: String { rawValue }

        /// The input is not valid gzip data (bad header, bad deflate data, CRC mismatch,
        /// or bytes after the last member that are not another gzip member).
        package static let corrupt = Code("corrupt")
        /// The input ended before the end of a gzip member.
        package static let truncated = Code("truncated")
        /// The output would exceed ``GzipLimits/maxOutputBytes`` or the output/input
        /// ratio ``GzipLimits/maxRatio`` (a decompression bomb).
        package static let limitExceeded = Code("limitExceeded")
        /// A bad argument (such as a compression level outside 0...9).
        package static let invalidArgument = Code("invalidArgument")
        /// zlib failed for another reason (out of memory, a version mismatch).
        package static let zlibFailure = Code("zlibFailure")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do.
    package var message: String
    /// zlib's return code, when zlib reported the failure.
    package var zlibCode: Int32?

    /// Creates an error.
    package init(code: Code, message: String, zlibCode: Int32? = nil) {
        self.code = code
        self.message = message
        self.zlibCode = zlibCode
    }

    package var description: String {
        var text = "GzipError.\(code): \(message)"
        if let zlibCode { text += " (zlib code \(zlibCode))" }
        return text
    }
}

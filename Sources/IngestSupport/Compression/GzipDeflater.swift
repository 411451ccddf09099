import CZlib

/// A streaming gzip (RFC 1952) compressor; with ``CompressionWrapper/zlib``
/// it writes a zlib (RFC 1950) stream instead.
///
/// Owns a separately allocated `z_stream` because zlib keeps pointers to it;
/// `deinit` ends the stream. Not thread-safe: use one deflater per thread.
///
/// ```swift
/// let deflater = try GzipDeflater(level: 6)
/// var out: [UInt8] = []
/// try bytes.withUnsafeBytes { try deflater.compress($0, appendingTo: &out) }
/// try deflater.finish(appendingTo: &out)   // out is now a complete .gz member
/// ```
package final class GzipDeflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private let scratch: UnsafeMutableRawBufferPointer
    private var finished = false

    /// The compression level, 0 (store) ... 9 (smallest).
    package let level: Int

    /// Creates a compressor writing one gzip member.
    /// - Parameter level: 0...9; default ``Gzip/defaultLevel``.
    /// - Parameter wrapper: the container; default gzip.
    package init(level: Int = Gzip.defaultLevel, wrapper: CompressionWrapper = .gzip) throws {
        guard (0...9).contains(level) else {
            throw GzipError(code: .invalidArgument, message: "compression level \(level) is outside 0...9")
        }
        self.level = level
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // windowBits 15 + 16 selects the gzip wrapper, 15 zlib's; memLevel 8 is zlib's default.
        let rc = dataingest_deflateInit2(stream, Int32(level), Z_DEFLATED, wrapper.windowBits, 8, Z_DEFAULT_STRATEGY)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw GzipError(code: .zlibFailure, message: "deflateInit2 failed", zlibCode: rc)
        }
        scratch = .allocate(byteCount: 64 << 10, alignment: 16)
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
        scratch.deallocate()
    }

    /// Compresses `input`, appending whatever compressed bytes zlib emits now.
    package func compress(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws {
        guard !finished else {
            throw GzipError(code: .invalidArgument, message: "compress after finish; call reset() to start a new member")
        }
        guard let base = input.baseAddress, input.count > 0 else { return }
        var offset = 0
        while offset < input.count {
            // avail_in is 32-bit: feed at most 1 GiB at a time.
            let chunk = min(input.count - offset, 1 << 30)
            stream.pointee.next_in = UnsafeMutablePointer(mutating: base.advanced(by: offset).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(chunk)
            try run(flush: Z_NO_FLUSH, output: &output)
            offset += chunk
        }
    }

    /// Compresses a byte array (convenience for ``compress(_:appendingTo:)``).
    package func compress(_ input: [UInt8], appendingTo output: inout [UInt8]) throws {
        try input.withUnsafeBytes { (raw) throws in try compress(raw, appendingTo: &output) }
    }

    /// Ends the member: appends the remaining compressed bytes and the gzip trailer.
    package func finish(appendingTo output: inout [UInt8]) throws {
        guard !finished else { return }
        stream.pointee.next_in = nil
        stream.pointee.avail_in = 0
        try run(flush: Z_FINISH, output: &output)
        finished = true
    }

    /// Starts a new gzip member with the same level (reuses zlib's memory).
    package func reset() {
        deflateReset(stream)
        finished = false
    }

    private func run(flush: Int32, output: inout [UInt8]) throws {
        let out = scratch.baseAddress!.assumingMemoryBound(to: Bytef.self)
        while true {
            stream.pointee.next_out = out
            stream.pointee.avail_out = UInt32(scratch.count)
            let rc = deflate(stream, flush)
            let produced = scratch.count - Int(stream.pointee.avail_out)
            if produced > 0 {
                output.append(contentsOf: UnsafeRawBufferPointer(start: scratch.baseAddress, count: produced))
            }
            if flush == Z_FINISH {
                if rc == Z_STREAM_END { return }
                guard rc == Z_OK || rc == Z_BUF_ERROR else {
                    throw GzipError(code: .zlibFailure, message: "deflate failed while finishing", zlibCode: rc)
                }
            } else {
                guard rc == Z_OK || rc == Z_BUF_ERROR else {
                    throw GzipError(code: .zlibFailure, message: "deflate failed", zlibCode: rc)
                }
                // All input consumed and the output buffer not full: nothing more now.
                if stream.pointee.avail_in == 0 && stream.pointee.avail_out > 0 { return }
            }
        }
    }
}

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import IngestSupport

/// A source of bytes for ``SegmentReader``: a file, memory, or a gzip layer over either.
///
/// ```swift
/// let source = try GzipByteSource(FileByteSource(path: "00000000000000000042.seg.gz"))
/// let reader = try SegmentReader(source: source)
/// ```
package protocol SegmentByteSource: AnyObject {
    /// Reads up to `buffer.count` bytes into `buffer`; returns 0 only at the end.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int
}

/// Bytes held in memory (for example an HTTP upload body).
package final class MemoryByteSource: SegmentByteSource {
    private let bytes: [UInt8]
    private var offset = 0

    /// A source over `bytes`.
    package init(_ bytes: [UInt8]) { self.bytes = bytes }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let count = min(buffer.count, bytes.count - offset)
        guard count > 0 else { return 0 }
        bytes.withUnsafeBytes { raw in
            buffer.baseAddress!.copyMemory(from: raw.baseAddress! + offset, byteCount: count)
        }
        offset += count
        return count
    }
}

/// A file read sequentially through its own descriptor (closed in `deinit`).
package final class FileByteSource: SegmentByteSource {
    private let fd: Int32
    private var remaining: Int
    /// The file's path.
    package let path: String

    /// Opens `path` for reading, optionally reading at most `limit` bytes.
    /// - Throws: ``SegmentError/Code/io`` when the file cannot be opened.
    package init(path: String, limit: Int = .max) throws {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            throw SegmentError(code: .io, message: "cannot open \(path) for reading", errno: errno)
        }
        self.fd = fd
        self.path = path
        self.remaining = limit
    }

    deinit { close(fd) }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        let wanted = min(buffer.count, remaining)
        guard wanted > 0 else { return 0 }
        while true {
            let n = Glibc.read(fd, buffer.baseAddress, wanted)
            if n >= 0 {
                remaining -= n
                return n
            }
            if errno == EINTR { continue }
            throw SegmentError(code: .io, message: "cannot read \(path)", errno: errno)
        }
    }
}

/// Inflates gzip data from another source, within ``GzipLimits`` (the
/// server's defence against decompression bombs). Reports a stream that ends
/// inside a gzip member as ``SegmentError/Code/compression`` with gzip code `truncated`.
package final class GzipByteSource: SegmentByteSource {
    private let upstream: SegmentByteSource
    private let inflater: GzipInflater
    private let input: UnsafeMutableRawBufferPointer
    private var inputStart = 0
    private var inputEnd = 0
    private var upstreamDone = false

    /// A gzip layer over `upstream`.
    package init(_ upstream: SegmentByteSource, limits: GzipLimits = GzipLimits()) throws {
        self.upstream = upstream
        do { inflater = try GzipInflater(limits: limits) } catch { throw Self.wrap(error) }
        input = .allocate(byteCount: 64 << 10, alignment: 16)
    }

    deinit { input.deallocate() }

    /// Compressed bytes consumed so far.
    package var compressedBytesRead: Int { inflater.totalIn }

    package func read(into buffer: UnsafeMutableRawBufferPointer) throws -> Int {
        guard buffer.count > 0 else { return 0 }
        // Bounded: each pass consumes input, produces output, or reads upstream.
        while true {
            if inputStart == inputEnd && !upstreamDone {
                inputStart = 0
                inputEnd = try upstream.read(into: input)
                if inputEnd == 0 { upstreamDone = true }
            }
            if inputStart == inputEnd && upstreamDone {
                // All input used: zlib may still hold buffered output.
                let (_, produced) = try inflateStep(UnsafeRawBufferPointer(start: input.baseAddress, count: 0), buffer)
                if produced > 0 { return produced }
                do { try inflater.finish() } catch { throw Self.wrap(error) }
                return 0
            }
            let pending = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(input)[inputStart..<inputEnd])
            let (consumed, produced) = try inflateStep(pending, buffer)
            inputStart += consumed
            if produced > 0 { return produced }
            if consumed == 0 {
                throw SegmentError(code: .compression, message: "the gzip stream makes no progress", gzipCode: .corrupt)
            }
        }
    }

    private func inflateStep(_ pending: UnsafeRawBufferPointer, _ buffer: UnsafeMutableRawBufferPointer) throws -> (Int, Int) {
        do { return try inflater.inflate(pending, into: buffer) } catch { throw Self.wrap(error) }
    }

    static func wrap(_ error: Error) -> Error {
        guard let gzip = error as? GzipError else { return error }
        return SegmentError(code: .compression, message: gzip.message, gzipCode: gzip.code)
    }
}

import CZlib

/// A streaming gzip (RFC 1952) decompressor with an output-size limit and a
/// compression-ratio limit, safe on hostile input. With
/// ``CompressionWrapper/zlib`` it reads zlib (RFC 1950) streams instead, as
/// Realm's sync protocol sends them.
///
/// Concatenated gzip members (as `cat a.gz b.gz` produces, and as `gzip -d`
/// accepts) are decompressed one after the other into a single stream. Bytes
/// after the last member that do not start another valid member are
/// ``GzipError/Code/corrupt``; input that ends inside a member is
/// ``GzipError/Code/truncated`` (reported by ``finish()``).
///
/// Every gzip member's CRC-32 and length (its trailer) are verified. Where
/// ``CRC32`` folds with carry-less multiplication, the inflater checks them
/// itself (zlib's table-driven `crc32_z` cost about 3.9 instructions per
/// inflated byte) and tells zlib not to (`inflateValidate`), for members
/// whose header has no header CRC (FHCRC); other members, other CPUs and
/// `DATAINGEST_PORTABLE=1` are checked by zlib. A mismatch is
/// ``GzipError/Code/corrupt`` with zlib's message either way.
///
/// Owns a separately allocated `z_stream` (zlib keeps its address); `deinit`
/// ends it. Not thread-safe.
///
/// ```swift
/// let inflater = try GzipInflater(limits: GzipLimits(maxOutputBytes: 64 << 20))
/// var out: [UInt8] = []
/// for chunk in chunks { try chunk.withUnsafeBytes { try inflater.inflate($0, appendingTo: &out) } }
/// try inflater.finish()
/// ```
package final class GzipInflater {
    private let stream: UnsafeMutablePointer<z_stream>
    private var needsReset = false
    /// No inflate call has seen the current member's first bytes yet.
    private var memberStarting = true
    /// This member's trailer is checked here, not by zlib.
    private var checksOwnTrailer = false
    /// The CRC-32 and length of the current member's output so far (when ``checksOwnTrailer``).
    private var memberCRC: UInt32 = 0
    private var memberBytes = 0
    /// The last 8 input bytes consumed, oldest in the lowest byte: at the
    /// end of a member, its trailer (zlib consumes exactly to its end).
    private var lastInput: UInt64 = 0
    /// A trailer mismatch found here; zlib's state stays as bad after one.
    private var trailerFailure: GzipError?
    /// Members whose trailer this inflater checked itself (the rest zlib checked).
    package private(set) var trailersCheckedHere = 0

    /// The limits checked while inflating.
    package let limits: GzipLimits
    /// Compressed bytes consumed so far (all members).
    package private(set) var totalIn = 0
    /// Decompressed bytes produced so far (all members).
    package private(set) var totalOut = 0
    /// Whether the input so far ends exactly at the end of a gzip member.
    package var isAtMemberBoundary: Bool { needsReset }

    /// The container this inflater reads.
    package let wrapper: CompressionWrapper

    /// Creates a decompressor with the given limits, for gzip data unless
    /// `wrapper` says otherwise.
    package init(limits: GzipLimits = GzipLimits(), wrapper: CompressionWrapper = .gzip) throws {
        self.limits = limits
        self.wrapper = wrapper
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // One wrapper only: gzip (15 + 16) or zlib (15); any other stream is corrupt.
        let rc = dataingest_inflateInit2(stream, wrapper.windowBits)
        guard rc == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw GzipError(code: .zlibFailure, message: "inflateInit2 failed", zlibCode: rc)
        }
    }

    deinit {
        inflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// Inflates from `input` into `output` until the input is used up or the
    /// output is full. Call again with the unconsumed rest of the input.
    ///
    /// - Returns: how many input bytes were consumed and output bytes produced.
    /// - Throws: ``GzipError`` with code `corrupt` or `limitExceeded`.
    package func inflate(
        _ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer
    ) throws -> (consumed: Int, produced: Int) {
        if let trailerFailure { throw trailerFailure }
        guard let outBase = output.baseAddress, output.count > 0 else { return (0, 0) }
        var consumed = 0
        var produced = 0
        while produced < output.count {
            if needsReset {
                // A member ended; only more input can start another one.
                guard consumed < input.count else { break }
                inflateReset(stream)
                needsReset = false
                memberStarting = true
                checksOwnTrailer = false
            }
            if memberStarting && consumed < input.count {
                startMember(UnsafeRawBufferPointer(rebasing: input[consumed...]))
            }
            let inChunk = min(input.count - consumed, Int(UInt32.max))
            let outChunk = min(output.count - produced, Int(UInt32.max))
            // With no input left zlib may still flush output it holds.
            stream.pointee.next_in =
                inChunk == 0
                ? nil
                : UnsafeMutablePointer(
                    mutating: input.baseAddress!.advanced(by: consumed).assumingMemoryBound(to: Bytef.self))
            stream.pointee.avail_in = UInt32(inChunk)
            stream.pointee.next_out = outBase.advanced(by: produced).assumingMemoryBound(to: Bytef.self)
            stream.pointee.avail_out = UInt32(outChunk)
            let rc = CZlib.inflate(stream, Z_NO_FLUSH)
            let usedIn = inChunk - Int(stream.pointee.avail_in)
            let madeOut = outChunk - Int(stream.pointee.avail_out)
            if checksOwnTrailer {
                if madeOut > 0 {
                    memberCRC = CRC32.update(
                        memberCRC, UnsafeRawBufferPointer(start: outBase.advanced(by: produced), count: madeOut))
                    memberBytes &+= madeOut
                }
                if usedIn > 0 { keepLastInput(UnsafeRawBufferPointer(start: input.baseAddress! + consumed, count: usedIn)) }
            }
            consumed += usedIn
            produced += madeOut
            totalIn += usedIn
            totalOut += madeOut
            try checkLimits()
            switch rc {
            case Z_OK:
                if usedIn == 0 && madeOut == 0 { return (consumed, produced) }
            case Z_STREAM_END:
                if checksOwnTrailer { try checkTrailer() }
                needsReset = true
            case Z_BUF_ERROR:
                // No progress possible: needs more input (or output space).
                return (consumed, produced)
            case Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR:
                throw corrupt(at: totalIn, stream.pointee.msg.map { String(cString: $0) } ?? "invalid data", zlibCode: rc)
            default:
                throw GzipError(code: .zlibFailure, message: "inflate failed", zlibCode: rc)
            }
        }
        return (consumed, produced)
    }

    /// Inflates all of `input`, appending the output (convenience for small inputs;
    /// memory grows with the output, bounded by ``GzipLimits/maxOutputBytes``).
    package func inflate(_ input: UnsafeRawBufferPointer, appendingTo output: inout [UInt8]) throws {
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { scratch.deallocate() }
        var offset = 0
        while true {
            let rest = UnsafeRawBufferPointer(rebasing: input[offset...])
            let (consumed, produced) = try inflate(rest, into: scratch)
            offset += consumed
            if produced > 0 {
                output.append(contentsOf: UnsafeRawBufferPointer(rebasing: scratch[..<produced]))
            }
            // Done when the input is used up and zlib has no more output pending.
            if produced == 0 && (consumed == 0 || offset >= input.count) { return }
        }
    }

    /// Checks that the input ended at the end of a gzip member.
    /// - Throws: ``GzipError/Code/truncated`` when the data stopped mid-member or was empty.
    package func finish() throws {
        guard needsReset else {
            throw GzipError(
                code: .truncated,
                message: totalIn == 0
                    ? "the \(wrapper.name) data is empty"
                    : "the \(wrapper.name) data ends inside a member after \(totalIn) bytes; the upload or file is incomplete")
        }
    }

    /// Decides who checks the trailer of the member that starts at
    /// `input`: this inflater when the CRC folds and the header's flags
    /// (byte 3) are at hand without FHCRC, zlib otherwise (the header
    /// CRC is zlib's check too, and it is skipped with the trailer's).
    private func startMember(_ input: UnsafeRawBufferPointer) {
        memberStarting = false
        checksOwnTrailer =
            wrapper == .gzip && CRC32.usesFolding && input.count >= 4 && input[0] == 0x1F && input[1] == 0x8B
            && input[3] & 0x02 == 0
        inflateValidate(stream, checksOwnTrailer ? 0 : 1)
        memberCRC = 0
        memberBytes = 0
    }

    @inline(__always)
    private func keepLastInput(_ bytes: UnsafeRawBufferPointer) {
        if bytes.count >= 8 {
            lastInput = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
        } else {
            for byte in bytes { lastInput = lastInput >> 8 | UInt64(byte) << 56 }
        }
    }

    /// The gzip trailer (CRC-32, then the length modulo 2^32, little-endian)
    /// against the member's output, with zlib's messages and offsets.
    private func checkTrailer() throws {
        trailersCheckedHere += 1
        var failure: (String, Int)?
        if UInt32(truncatingIfNeeded: lastInput) != memberCRC {
            // zlib stops after the CRC field, before the length.
            failure = ("incorrect data check", totalIn - 4)
        } else if UInt32(truncatingIfNeeded: lastInput >> 32) != UInt32(truncatingIfNeeded: memberBytes) {
            failure = ("incorrect length check", totalIn)
        }
        guard let (detail, offset) = failure else { return }
        let error = corrupt(at: offset, detail, zlibCode: Z_DATA_ERROR)
        trailerFailure = error
        throw error
    }

    /// Corrupt input, in the same words whether zlib or this inflater found it.
    private func corrupt(at offset: Int, _ detail: String, zlibCode: Int32) -> GzipError {
        GzipError(
            code: .corrupt, message: "the \(wrapper.name) data is corrupt at compressed byte \(offset): \(detail)",
            zlibCode: zlibCode)
    }

    private func checkLimits() throws {
        if totalOut > limits.maxOutputBytes {
            throw GzipError(
                code: .limitExceeded,
                message: "decompressed size exceeds the limit of \(limits.maxOutputBytes) bytes; "
                    + "send smaller bodies or raise GzipLimits.maxOutputBytes")
        }
        if totalOut > limits.ratioCheckFloorBytes && totalOut / max(totalIn, 1) > limits.maxRatio {
            throw GzipError(
                code: .limitExceeded,
                message: "compression ratio exceeds \(limits.maxRatio):1 (\(totalOut) bytes from \(totalIn)); "
                    + "likely a decompression bomb")
        }
    }
}

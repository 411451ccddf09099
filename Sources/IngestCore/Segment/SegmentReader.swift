/// Reads a segment stream frame by frame through a bounded buffer: memory
/// stays below about ``Limits/maxFramePayloadBytes`` whatever the segment's
/// size, and hostile bytes produce a ``SegmentError``, never a crash.
///
/// ```swift
/// let reader = try SegmentReader(gzipBytes: uploadBody, limits: .init(gzip: serverLimits))
/// var transaction: [SegmentRecord] = []
/// while let event = try reader.next() {
///     switch event {
///     case .record(let record): transaction.append(record)
///     case .commit: write(transaction); transaction.removeAll()
///     case .end: break
///     }
/// }
/// ```
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport
package final class SegmentReader {
    /// Bounds on what a reader accepts.
    package struct Limits: Sendable, Hashable {
        /// The largest frame payload: a 16 MiB document plus its name. Default 16 MiB + 4 KiB.
        package var maxFramePayloadBytes: Int
        /// Limits for the gzip layer (sealed segments and uploads).
        package var gzip: GzipLimits

        /// Creates limits; every argument has a documented default.
        package init(maxFramePayloadBytes: Int = (16 << 20) + 4096, gzip: GzipLimits = GzipLimits()) {
            self.maxFramePayloadBytes = maxFramePayloadBytes
            self.gzip = gzip
        }
    }

    /// The segment's header (read by `init`).
    package let header: SegmentHeader
    /// Whether the stream must close with an end frame (sealed segments) or may
    /// stop at any frame boundary (an active segment file).
    package let requiresEnd: Bool
    /// Records read so far.
    @exclusivity(unchecked) package private(set) var recordCount = 0
    /// Committed transactions read so far.
    @exclusivity(unchecked) package private(set) var transactionCount = 0
    /// Records read since the last commit frame.
    @exclusivity(unchecked) package private(set) var uncommittedRecordCount = 0
    /// Stream offset just after the last complete frame.
    @exclusivity(unchecked) package private(set) var offset = 0
    /// Stream offset just after the last commit frame (or the header): where a
    /// torn active segment is cut back to.
    @exclusivity(unchecked) package private(set) var offsetAfterLastCommit = 0
    /// The last transaction number seen in a commit frame.
    @exclusivity(unchecked) package private(set) var lastTransactionNumber: UInt64?
    /// Whether the end frame has been read.
    @exclusivity(unchecked) package private(set) var sawEnd = false
    /// Whether an active stream (`requiresEnd == false`) ended at a zero byte
    /// where a frame type was expected: the client store's preallocated, still
    /// unwritten space (Docs/SegmentFormat.md). `offset` is where it starts.
    @exclusivity(unchecked) package private(set) var endedAtUnwrittenSpace = false

    /// Called with the type and payload of every optional frame (lower-case
    /// type) before it is skipped, e.g. the client store's cursor frames.
    @exclusivity(unchecked) package var onOptionalFrame: ((UInt8, UnsafeRawBufferPointer) -> Void)?

    // `@exclusivity(unchecked)` on the stored variables: a reader is used by
    // one thread at a time and none of its methods re-enters another, so
    // every access is exclusive by construction; the run-time checks were
    // about a tenth of an upload's instructions (Benchmarks/README.md).
    private let source: SegmentByteSource
    private let limits: Limits
    @exclusivity(unchecked) private var buffer: UnsafeMutableRawBufferPointer
    @exclusivity(unchecked) private var start = 0
    @exclusivity(unchecked) private var end = 0
    @exclusivity(unchecked) private var sourceDone = false
    @exclusivity(unchecked) private var lastNameBytes: [UInt8] = []
    @exclusivity(unchecked) private var lastName = ""

    /// Reads the magic and the header from `source`.
    /// - Parameter requiresEnd: `true` for sealed segments (default).
    package init(source: SegmentByteSource, limits: Limits = Limits(), requiresEnd: Bool = true) throws {
        self.source = source
        self.limits = limits
        self.requiresEnd = requiresEnd
        buffer = .allocate(byteCount: 64 << 10, alignment: 16)
        // A throwing init of a class must still free what it allocated.
        do {
            header = try Self.readStart(source: source, limits: limits, buffer: &buffer, start: &start, end: &end, sourceDone: &sourceDone)
        } catch {
            buffer.deallocate()
            throw error
        }
        offset = start
        offsetAfterLastCommit = start
    }

    /// Reads a sealed segment from gzip bytes in memory (an upload body).
    package convenience init(gzipBytes: [UInt8], limits: Limits = Limits()) throws {
        try self.init(source: GzipByteSource(MemoryByteSource(gzipBytes), limits: limits.gzip), limits: limits)
    }

    /// Reads a sealed segment file (`*.seg.gz`).
    package convenience init(sealedFileAt path: String, limits: Limits = Limits()) throws {
        try self.init(source: GzipByteSource(FileByteSource(path: path), limits: limits.gzip), limits: limits)
    }

    deinit { buffer.deallocate() }

    /// The next event, or `nil` after the end frame (sealed) or at the end of
    /// the stream at a frame boundary (active segment).
    package func next() throws -> SegmentEvent? {
        if endedAtUnwrittenSpace { return nil }
        while true {
            if sawEnd {
                if try fill(1) > 0 {
                    throw SegmentError(code: .malformedFrame, message: "bytes follow the end frame", offset: offset)
                }
                return nil
            }
            let available = try fill(SegmentFormat.frameHeaderSize)
            if available == 0 {
                if requiresEnd {
                    throw SegmentError(code: .truncated, message: "the segment ends without its end frame", offset: offset)
                }
                return nil
            }
            if !requiresEnd && UnsafeRawBufferPointer(buffer)[start] == 0 {
                // No frame type is 0: this is preallocated space no transaction
                // was published into; whatever follows is not part of the stream.
                endedAtUnwrittenSpace = true
                return nil
            }
            guard available >= SegmentFormat.frameHeaderSize else {
                throw SegmentError(code: .truncated, message: "the stream ends inside a frame header", offset: offset)
            }
            let (type, payload) = try readFrame()
            defer { consumeFrame(payloadCount: payload.count) }
            switch type {
            case SegmentFormat.FrameType.record:
                return .record(try parseRecord(payload))
            case SegmentFormat.FrameType.commit:
                guard payload.count == 12 else { throw malformed("a commit frame has \(payload.count) payload bytes, expected 12") }
                let number = SegmentFormat.readLE(UInt64.self, payload, 0)
                let count = Int(SegmentFormat.readLE(UInt32.self, payload, 8))
                guard count == uncommittedRecordCount else {
                    throw malformed("a commit frame counts \(count) records, the stream holds \(uncommittedRecordCount)")
                }
                uncommittedRecordCount = 0
                transactionCount += 1
                lastTransactionNumber = number
                offsetAfterLastCommit = offset + SegmentFormat.frameOverhead + payload.count
                return .commit(SegmentCommit(transactionNumber: number, recordCount: count))
            case SegmentFormat.FrameType.end:
                guard payload.count == 16 else { throw malformed("an end frame has \(payload.count) payload bytes, expected 16") }
                let records = SegmentFormat.readLE(UInt64.self, payload, 0)
                let transactions = SegmentFormat.readLE(UInt64.self, payload, 8)
                guard uncommittedRecordCount == 0, records == UInt64(recordCount), transactions == UInt64(transactionCount) else {
                    throw malformed(
                        "the end frame counts \(records) records in \(transactions) transactions, the stream holds \(recordCount) in \(transactionCount) (\(uncommittedRecordCount) uncommitted)"
                    )
                }
                sawEnd = true
                return .end(SegmentEnd(recordCount: recordCount, transactionCount: transactionCount))
            case SegmentFormat.FrameType.header:
                throw malformed("a second header frame")
            default:
                if SegmentFormat.FrameType.isSkippable(type) {
                    onOptionalFrame?(type, payload)
                    continue
                }
                throw malformed("unknown frame type 0x\(String(type, radix: 16))")
            }
        }
    }

    // MARK: - Buffer

    /// Makes at least `count` bytes available if the source has them; returns how many are.
    private func fill(_ count: Int) throws -> Int {
        try Self.fill(count, source: source, buffer: &buffer, start: &start, end: &end, sourceDone: &sourceDone)
    }

    private static func fill(
        _ count: Int, source: SegmentByteSource, buffer: inout UnsafeMutableRawBufferPointer,
        start: inout Int, end: inout Int, sourceDone: inout Bool
    ) throws -> Int {
        if end - start >= count || sourceDone { return end - start }
        if buffer.count < count {
            let bigger = UnsafeMutableRawBufferPointer.allocate(byteCount: max(count, buffer.count * 2), alignment: 16)
            bigger.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start)
            buffer.deallocate()
            buffer = bigger
            end -= start
            start = 0
        } else if buffer.count - start < count {
            buffer.baseAddress!.copyMemory(from: buffer.baseAddress! + start, byteCount: end - start)
            end -= start
            start = 0
        }
        while end - start < count {
            let n = try source.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[end...]))
            if n == 0 {
                sourceDone = true
                break
            }
            end += n
        }
        return end - start
    }

    /// Reads and checks one whole frame at the buffer's start; returns its type
    /// and payload (valid until `consumeFrame`).
    private func readFrame() throws -> (UInt8, UnsafeRawBufferPointer) {
        let view = UnsafeRawBufferPointer(buffer)
        let type = view[start]
        let length = Int(SegmentFormat.readLE(UInt32.self, view, start + 1))
        guard length <= limits.maxFramePayloadBytes else {
            throw SegmentError(
                code: .frameTooLarge, message: "a frame declares \(length) payload bytes, the limit is \(limits.maxFramePayloadBytes)",
                offset: offset)
        }
        let total = SegmentFormat.frameOverhead + length
        guard try fill(total) >= total else {
            throw SegmentError(code: .truncated, message: "the stream ends inside a frame of \(total) bytes", offset: offset)
        }
        let frame = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[start..<(start + total)])
        let stored = SegmentFormat.readLE(UInt32.self, frame, total - 4)
        let covered = UnsafeRawBufferPointer(rebasing: frame[0..<(total - 4)])
        let computed = SegmentFormat.checksum(covered, version: header.formatVersion)
        guard stored == computed else {
            throw SegmentError(
                code: .checksumMismatch, message: "frame checksum mismatch (type 0x\(String(type, radix: 16)), \(length) bytes)",
                offset: offset)
        }
        return (type, UnsafeRawBufferPointer(rebasing: frame[SegmentFormat.frameHeaderSize..<(total - 4)]))
    }

    private func consumeFrame(payloadCount: Int) {
        start += SegmentFormat.frameOverhead + payloadCount
        offset += SegmentFormat.frameOverhead + payloadCount
    }

    private func parseRecord(_ payload: UnsafeRawBufferPointer) throws -> SegmentRecord {
        guard payload.count >= 2 + 1 + 5 else { throw malformed("a record frame of \(payload.count) bytes is too short") }
        let nameCount = Int(SegmentFormat.readLE(UInt16.self, payload, 0))
        guard nameCount >= 1, nameCount <= SegmentFormat.maxCollectionNameBytes, 2 + nameCount + 5 <= payload.count else {
            throw malformed("a record's collection name length \(nameCount) does not fit")
        }
        let nameBytes = UnsafeRawBufferPointer(rebasing: payload[2..<(2 + nameCount)])
        let name: String
        let sameName =
            nameBytes.count == lastNameBytes.count
            && lastNameBytes.withUnsafeBytes { last in
                memcmp(last.baseAddress!, nameBytes.baseAddress!, nameCount) == 0
            }
        if sameName {
            name = lastName  // consecutive records usually share a collection
        } else {
            guard let decoded = String(validating: nameBytes, as: UTF8.self) else {
                throw malformed("a record's collection name is not valid UTF-8")
            }
            name = decoded
            lastName = decoded
            lastNameBytes = Array(nameBytes)
        }
        let documentStart = 2 + nameCount
        let documentCount = payload.count - documentStart
        let declared = Int(SegmentFormat.readLE(Int32.self, payload, documentStart))
        guard declared == documentCount, payload[payload.count - 1] == 0 else {
            throw malformed("a record's BSON length prefix \(declared) does not match its \(documentCount) bytes")
        }
        // From the rebased buffer, not its slice: a slice is copied through
        // a generic element-by-element iterator (about 100 instructions a record).
        let document = [UInt8](UnsafeRawBufferPointer(rebasing: payload[documentStart...]))
        let record = SegmentRecord(index: recordCount, collection: name, document: document)
        recordCount += 1
        uncommittedRecordCount += 1
        return record
    }

    private func malformed(_ message: String) -> SegmentError {
        SegmentError(code: .malformedFrame, message: message, offset: offset)
    }

    private static func readStart(
        source: SegmentByteSource, limits: Limits, buffer: inout UnsafeMutableRawBufferPointer,
        start: inout Int, end: inout Int, sourceDone: inout Bool
    ) throws -> SegmentHeader {
        let magicCount = SegmentFormat.magic.count
        let minimum = magicCount + SegmentFormat.frameOverhead + 41
        let available = try fill(minimum, source: source, buffer: &buffer, start: &start, end: &end, sourceDone: &sourceDone)
        let view = UnsafeRawBufferPointer(buffer)
        guard available >= magicCount, view[0..<magicCount].elementsEqual(SegmentFormat.magic) else {
            if available >= magicCount, view[0..<magicCount].elementsEqual(EncryptedFileHeader.magic) {
                throw SegmentError(
                    code: .keyRequired, message: "the segment is encrypted: read it with the store's encryption key", offset: 0)
            }
            if available < magicCount, view[0..<available].elementsEqual(SegmentFormat.magic.prefix(available)) {
                throw SegmentError(code: .truncated, message: "the segment ends inside its magic bytes", offset: 0)
            }
            throw SegmentError(code: .badMagic, message: "not a segment stream (bad magic bytes)", offset: 0)
        }
        guard available >= magicCount + SegmentFormat.frameHeaderSize else {
            throw SegmentError(code: .truncated, message: "the segment ends before its header frame", offset: magicCount)
        }
        guard view[magicCount] == SegmentFormat.FrameType.header else {
            throw SegmentError(code: .malformedFrame, message: "the first frame is not a header", offset: magicCount)
        }
        let length = Int(SegmentFormat.readLE(UInt32.self, view, magicCount + 1))
        guard length <= limits.maxFramePayloadBytes else {
            throw SegmentError(code: .frameTooLarge, message: "the header declares \(length) bytes", offset: magicCount)
        }
        let total = magicCount + SegmentFormat.frameOverhead + length
        guard try fill(total, source: source, buffer: &buffer, start: &start, end: &end, sourceDone: &sourceDone) >= total else {
            throw SegmentError(code: .truncated, message: "the segment ends inside its header frame", offset: magicCount)
        }
        let frame = UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(buffer)[magicCount..<total])
        let stored = SegmentFormat.readLE(UInt32.self, frame, frame.count - 4)
        let covered = UnsafeRawBufferPointer(rebasing: frame[0..<(frame.count - 4)])
        let payload = UnsafeRawBufferPointer(rebasing: frame[SegmentFormat.frameHeaderSize..<(frame.count - 4)])
        // The version (the payload's first two bytes) names the checksum of
        // every frame, the header's own included, so it is read first. A
        // version this reader does not know is reported as such only when
        // one of the known checksums vouches for the bytes; otherwise they
        // are damaged.
        let version = payload.count >= 2 ? SegmentFormat.readLE(UInt16.self, payload, 0) : 0
        guard SegmentFormat.readableVersions.contains(version) else {
            guard stored == CRC32C.update(0, covered) || stored == CRC32.update(0, covered) else {
                throw SegmentError(code: .checksumMismatch, message: "header checksum mismatch", offset: magicCount)
            }
            throw SegmentError(
                code: .unsupportedVersion,
                message:
                    "segment format version \(version) is not supported (this reader knows 1 and 2); update the software",
                offset: magicCount)
        }
        guard stored == SegmentFormat.checksum(covered, version: version) else {
            throw SegmentError(code: .checksumMismatch, message: "header checksum mismatch", offset: magicCount)
        }
        guard payload.count >= 41 else {
            throw SegmentError(code: .malformedFrame, message: "the header frame is too short", offset: magicCount)
        }
        let storeId = SegmentStoreID(bytes: Array(payload[4..<20]))!
        let number = SegmentFormat.readLE(UInt64.self, payload, 20)
        let created = SegmentFormat.readLE(Int64.self, payload, 28)
        let schemaCount = Int(SegmentFormat.readLE(Int32.self, payload, 36))
        guard schemaCount >= 5, 36 + schemaCount <= payload.count, payload[36 + schemaCount - 1] == 0 else {
            throw SegmentError(
                code: .malformedFrame, message: "the header's schema BSON length prefix \(schemaCount) does not fit", offset: magicCount)
        }
        // Bytes after the schema are reserved for later minor additions and ignored.
        var header = SegmentHeader(
            storeId: storeId, segmentNumber: number, createdAtMillis: created, schema: Array(payload[36..<(36 + schemaCount)]))
        header.formatVersion = version
        start = total
        return header
    }
}

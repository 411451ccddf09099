/// The bytes of the segment format (specified in Docs/SegmentFormat.md).
///
/// A segment stream is the 8 magic bytes followed by frames; a sealed segment
/// is that stream gzip-compressed. Every frame is
/// `type (u8) | payload length N (u32 LE) | payload (N bytes) | CRC (u32 LE)`,
/// the CRC covering type, length and payload: CRC-32C in version 2 (what
/// this code writes), CRC-32 in version 1 (still read, and written when a
/// header asks for it).
///
/// These encoders append to a reused buffer so a transaction is built without
/// intermediate copies:
///
/// ```swift
/// var buffer: [UInt8] = []
/// try SegmentFormat.appendRecord(collection: "WeatherSensor", document: bson, to: &buffer)
/// SegmentFormat.appendCommit(transactionNumber: 7, recordCount: 1, to: &buffer)
/// ```
import IngestSupport
package enum SegmentFormat {
    /// `"DISEG\r\n\u{1A}"`: identifies a segment stream and catches text-mode mangling.
    package static let magic: [UInt8] = [0x44, 0x49, 0x53, 0x45, 0x47, 0x0D, 0x0A, 0x1A]
    /// The format version this code writes.
    package static let version: UInt16 = 2
    /// The format versions this code reads: 1 (frames checked with CRC-32)
    /// and 2 (CRC-32C, otherwise the same bytes).
    package static let readableVersions: ClosedRange<UInt16> = 1...2
    /// Bytes before a frame's payload (type + length).
    package static let frameHeaderSize = 5
    /// Bytes of framing around a payload (type + length + CRC).
    package static let frameOverhead = 9
    /// The largest BSON document accepted (MongoDB's limit).
    package static let maxDocumentBytes = 16 << 20
    /// The longest collection name, in UTF-8 bytes.
    package static let maxCollectionNameBytes = 255
    /// The encoded empty BSON document (`{}`).
    package static let emptyDocument: [UInt8] = [5, 0, 0, 0, 0]
    /// Size of an encoded commit frame.
    package static let commitFrameSize = frameOverhead + 12

    /// Frame type bytes.
    package enum FrameType {
        /// `H`: the header, first frame of a stream.
        package static let header: UInt8 = 0x48
        /// `R`: one record.
        package static let record: UInt8 = 0x52
        /// `C`: commit, closing a transaction.
        package static let commit: UInt8 = 0x43
        /// `E`: end, the last frame of a sealed segment.
        package static let end: UInt8 = 0x45
        /// `c`: a cursor of the transaction whose commit frame follows (an
        /// optional frame: readers that do not know it skip it).
        package static let cursor: UInt8 = 0x63
        /// Lower-case ASCII letters are optional frames: readers skip them.
        package static func isSkippable(_ type: UInt8) -> Bool { type >= 0x61 && type <= 0x7A }
    }

    /// The checksum of a frame's type, length and payload in format `version`:
    /// CRC-32C from version 2 on, CRC-32 (zlib's) in version 1.
    @inline(__always)
    package static func checksum(_ bytes: UnsafeRawBufferPointer, version: UInt16) -> UInt32 {
        version >= 2 ? CRC32C.update(0, bytes) : CRC32.update(0, bytes)
    }

    /// Appends the magic bytes and the header frame; the frames after it
    /// must be of the header's ``SegmentHeader/formatVersion``.
    package static func appendStart(_ header: SegmentHeader, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: magic)
        let start = beginFrame(FrameType.header, to: &buffer)
        appendLE(header.formatVersion, to: &buffer)
        appendLE(UInt16(0), to: &buffer)  // flags, reserved
        buffer.append(contentsOf: header.storeId.bytes)
        appendLE(header.segmentNumber, to: &buffer)
        appendLE(header.createdAtMillis, to: &buffer)
        buffer.append(contentsOf: header.schema)
        endFrame(start: start, version: header.formatVersion, to: &buffer)
    }

    /// Appends a record frame for one BSON document.
    /// - Throws: ``SegmentError/Code/invalidArgument`` for an empty or too long
    ///   name, or a document whose length prefix does not match its size or
    ///   which does not end with a zero byte. The buffer is left unchanged.
    package static func appendRecord(
        collection: String, document: UnsafeRawBufferPointer, version: UInt16 = SegmentFormat.version, to buffer: inout [UInt8]
    ) throws {
        var name = collection
        let nameCount = name.withUTF8 { $0.count }
        guard nameCount > 0 && nameCount <= maxCollectionNameBytes else {
            throw SegmentError(
                code: .invalidArgument, message: "collection name must be 1...\(maxCollectionNameBytes) UTF-8 bytes, got \(nameCount)")
        }
        let count = document.count
        let declared = count >= 4 ? Int(readLE(UInt32.self, document, 0)) : -1
        guard count >= 5, declared == count, document[count - 1] == 0, count <= maxDocumentBytes else {
            throw SegmentError(
                code: .invalidArgument,
                message: "the document for \(collection) is not one BSON document: \(count) bytes, length prefix \(declared)")
        }
        let frameCount = frameHeaderSize + 2 + nameCount + count + 4
        guard frameCount <= 4_096 else {
            try appendRecord(collection: collection, version: version, to: &buffer) { $0.append(contentsOf: document) }
            return
        }
        // The whole frame is made on the stack and appended at once: each
        // append to an array costs about 100 instructions, the copies of a
        // small frame much less.
        withUnsafeTemporaryAllocation(byteCount: frameCount, alignment: 8) { frame in
            let p = frame.baseAddress!
            p.storeBytes(
                of: (UInt64(FrameType.record) | UInt64(frameCount - frameOverhead) << 8 | UInt64(nameCount) << 40).littleEndian,
                as: UInt64.self)
            name.withUTF8 { (p + frameHeaderSize + 2).copyMemory(from: $0.baseAddress!, byteCount: nameCount) }
            (p + frameHeaderSize + 2 + nameCount).copyMemory(from: document.baseAddress!, byteCount: count)
            let crc = checksum(UnsafeRawBufferPointer(start: p, count: frameCount - 4), version: version)
            (p + frameCount - 4).storeBytes(of: crc.littleEndian, as: UInt32.self)
            buffer.append(contentsOf: UnsafeRawBufferPointer(frame))
        }
    }

    /// Appends a record frame for one BSON document held in an array.
    package static func appendRecord(
        collection: String, document: [UInt8], version: UInt16 = SegmentFormat.version, to buffer: inout [UInt8]
    ) throws {
        try document.withUnsafeBytes { try appendRecord(collection: collection, document: $0, version: version, to: &buffer) }
    }

    /// Appends a record frame whose document `encode` appends directly to the
    /// buffer (no intermediate copy), e.g. `{ doc.appendBSON(to: &$0) }`.
    /// `encode` must append exactly one BSON document.
    package static func appendRecord(
        collection: String, version: UInt16 = SegmentFormat.version, to buffer: inout [UInt8], encode: (inout [UInt8]) throws -> Void
    ) throws {
        var name = collection
        let nameCount = name.withUTF8 { $0.count }
        guard nameCount > 0 && nameCount <= maxCollectionNameBytes else {
            throw SegmentError(
                code: .invalidArgument, message: "collection name must be 1...\(maxCollectionNameBytes) UTF-8 bytes, got \(nameCount)")
        }
        // The type, the length (filled in by endFrame), the name's length and
        // the name in one append: each append of bytes costs about 100 instructions.
        let start = buffer.count
        withUnsafeTemporaryAllocation(byteCount: frameHeaderSize + 2 + nameCount, alignment: 8) { head in
            let p = head.baseAddress!
            p.storeBytes(of: (UInt64(FrameType.record) | UInt64(nameCount) << 40).littleEndian, as: UInt64.self)
            name.withUTF8 { (p + frameHeaderSize + 2).copyMemory(from: $0.baseAddress!, byteCount: nameCount) }
            buffer.append(contentsOf: UnsafeRawBufferPointer(head))
        }
        let documentStart = buffer.count
        do {
            try encode(&buffer)
        } catch {
            buffer.removeSubrange(start...)
            throw error
        }
        let documentCount = buffer.count - documentStart
        let declared = documentCount >= 4 ? Int(readLE(UInt32.self, buffer, documentStart)) : -1
        guard documentCount >= 5, declared == documentCount, buffer[buffer.count - 1] == 0,
            documentCount <= maxDocumentBytes
        else {
            buffer.removeSubrange(start...)
            throw SegmentError(
                code: .invalidArgument,
                message: "the document for \(collection) is not one BSON document: \(documentCount) bytes, length prefix \(declared)")
        }
        endFrame(start: start, version: version, to: &buffer)
    }

    /// Appends a commit frame closing a transaction of `recordCount` records.
    package static func appendCommit(
        transactionNumber: UInt64, recordCount: Int, version: UInt16 = SegmentFormat.version, to buffer: inout [UInt8]
    ) {
        let start = beginFrame(FrameType.commit, to: &buffer)
        appendLE(transactionNumber, to: &buffer)
        appendLE(UInt32(truncatingIfNeeded: recordCount), to: &buffer)
        endFrame(start: start, version: version, to: &buffer)
    }

    /// Stores a commit frame (``commitFrameSize`` bytes) at `destination`: the
    /// same bytes as ``appendCommit(transactionNumber:recordCount:to:)``, for
    /// the client store, which copies transactions into a memory mapping of
    /// its active segment.
    package static func storeCommit(
        transactionNumber: UInt64, recordCount: Int, version: UInt16 = SegmentFormat.version, at destination: UnsafeMutableRawPointer
    ) {
        destination.storeBytes(of: FrameType.commit, as: UInt8.self)
        destination.storeBytes(of: UInt32(12).littleEndian, toByteOffset: 1, as: UInt32.self)
        destination.storeBytes(of: transactionNumber.littleEndian, toByteOffset: 5, as: UInt64.self)
        destination.storeBytes(of: UInt32(truncatingIfNeeded: recordCount).littleEndian, toByteOffset: 13, as: UInt32.self)
        let crc = checksum(UnsafeRawBufferPointer(start: destination, count: commitFrameSize - 4), version: version)
        destination.storeBytes(of: crc.littleEndian, toByteOffset: commitFrameSize - 4, as: UInt32.self)
    }

    /// The longest cursor name, in UTF-8 bytes.
    package static let maxCursorNameBytes = 255
    /// The longest cursor value, in bytes.
    package static let maxCursorValueBytes = 64 << 10

    /// Appends a cursor frame (`c`): `name` is 1...255 UTF-8 bytes, `value`
    /// at most 64 KiB (empty: the cursor is removed).
    /// - Throws: ``SegmentError/Code/invalidArgument``; the buffer is unchanged.
    package static func appendCursor(name: String, value: [UInt8], version: UInt16 = SegmentFormat.version, to buffer: inout [UInt8]) throws
    {
        let nameBytes = Array(name.utf8)
        guard !nameBytes.isEmpty && nameBytes.count <= maxCursorNameBytes else {
            throw SegmentError(
                code: .invalidArgument, message: "a cursor name must be 1...\(maxCursorNameBytes) UTF-8 bytes, got \(nameBytes.count)")
        }
        guard value.count <= maxCursorValueBytes else {
            throw SegmentError(
                code: .invalidArgument, message: "the cursor \(name) has \(value.count) bytes, at most \(maxCursorValueBytes) are allowed")
        }
        let start = beginFrame(FrameType.cursor, to: &buffer)
        appendLE(UInt16(nameBytes.count), to: &buffer)
        buffer.append(contentsOf: nameBytes)
        buffer.append(contentsOf: value)
        endFrame(start: start, version: version, to: &buffer)
    }

    /// The name and value of a cursor frame's payload; `nil` if it is malformed.
    package static func parseCursor(_ payload: UnsafeRawBufferPointer) -> (name: String, value: [UInt8])? {
        guard payload.count >= 3 else { return nil }
        let count = Int(readLE(UInt16.self, payload, 0))
        guard count >= 1, count <= maxCursorNameBytes, 2 + count <= payload.count,
            payload.count - 2 - count <= maxCursorValueBytes,
            let name = String(validating: UnsafeRawBufferPointer(rebasing: payload[2..<(2 + count)]), as: UTF8.self)
        else { return nil }
        return (name, Array(payload[(2 + count)...]))
    }

    /// Appends the end frame that closes a sealed segment.
    package static func appendEnd(
        recordCount: Int, transactionCount: Int, version: UInt16 = SegmentFormat.version, to buffer: inout [UInt8]
    ) {
        let start = beginFrame(FrameType.end, to: &buffer)
        appendLE(UInt64(recordCount), to: &buffer)
        appendLE(UInt64(transactionCount), to: &buffer)
        endFrame(start: start, version: version, to: &buffer)
    }

    // MARK: - Little-endian helpers

    @inline(__always)
    static func beginFrame(_ type: UInt8, to buffer: inout [UInt8]) -> Int {
        let start = buffer.count
        withUnsafeBytes(of: UInt64(type).littleEndian) {
            buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<frameHeaderSize]))
        }
        return start
    }

    @inline(__always)
    static func endFrame(start: Int, version: UInt16, to buffer: inout [UInt8]) {
        let payload = UInt32(buffer.count - start - frameHeaderSize)
        buffer.withUnsafeMutableBytes { raw in
            raw.storeBytes(of: payload.littleEndian, toByteOffset: start + 1, as: UInt32.self)
        }
        let crc = buffer.withUnsafeBytes { checksum(UnsafeRawBufferPointer(rebasing: $0[start...]), version: version) }
        appendLE(crc, to: &buffer)
    }

    @inline(__always)
    static func appendLE<T: FixedWidthInteger>(_ value: T, to buffer: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { buffer.append(contentsOf: $0) }
    }

    @inline(__always)
    static func readLE<T: FixedWidthInteger>(_ type: T.Type, _ buffer: [UInt8], _ offset: Int) -> T {
        buffer.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: offset, as: T.self)) }
    }

    @inline(__always)
    static func readLE<T: FixedWidthInteger>(_ type: T.Type, _ raw: UnsafeRawBufferPointer, _ offset: Int) -> T {
        T(littleEndian: raw.loadUnaligned(fromByteOffset: offset, as: T.self))
    }
}

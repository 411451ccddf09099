/// Writes a sealed segment (a gzip stream) to an output function, compressing
/// as it goes so memory stays flat.
///
/// ```swift
/// final class Collect { var bytes: [UInt8] = [] }
/// let sink = Collect()
/// let writer = try SegmentWriter(header: header) { sink.bytes.append(contentsOf: $0) }
/// try writer.append(collection: "WeatherSensor", document: bson)
/// try writer.commit(transactionNumber: 1)
/// try writer.finish()   // sink.bytes is a complete .seg.gz
/// ```
import IngestSupport
package final class SegmentWriter {
    private let deflater: GzipDeflater
    private let output: (UnsafeRawBufferPointer) throws -> Void
    private var frames: [UInt8] = []
    private var compressed: [UInt8] = []
    private var finished = false
    /// The header's format version: every frame's checksum follows it.
    private let version: UInt16

    /// Records written so far.
    package private(set) var recordCount = 0
    /// Transactions committed so far.
    package private(set) var transactionCount = 0
    /// Records since the last commit.
    package private(set) var uncommittedRecordCount = 0

    /// Starts a segment with `header`, compressing at `level`. The frames are
    /// of `header.formatVersion` (``SegmentFormat/version`` unless the caller
    /// asks for version 1, as a test of old segments does).
    package init(header: SegmentHeader, level: Int = Gzip.defaultLevel, output: @escaping (UnsafeRawBufferPointer) throws -> Void) throws {
        self.deflater = try GzipDeflater(level: level)
        self.output = output
        self.version = header.formatVersion
        frames.reserveCapacity(128 << 10)
        SegmentFormat.appendStart(header, to: &frames)
    }

    /// Appends a record to the current transaction.
    package func append(collection: String, document: [UInt8]) throws {
        try SegmentFormat.appendRecord(collection: collection, document: document, version: version, to: &frames)
        recordCount += 1
        uncommittedRecordCount += 1
        try flushIfLarge()
    }

    /// Closes the current transaction.
    package func commit(transactionNumber: UInt64) throws {
        SegmentFormat.appendCommit(transactionNumber: transactionNumber, recordCount: uncommittedRecordCount, version: version, to: &frames)
        uncommittedRecordCount = 0
        transactionCount += 1
        try flushIfLarge()
    }

    /// Writes the end frame and the gzip trailer.
    /// - Throws: ``SegmentError/Code/invalidArgument`` if records are not committed.
    package func finish() throws {
        guard !finished else { return }
        guard uncommittedRecordCount == 0 else {
            throw SegmentError(
                code: .invalidArgument, message: "\(uncommittedRecordCount) records are not committed; call commit before finish")
        }
        SegmentFormat.appendEnd(recordCount: recordCount, transactionCount: transactionCount, version: version, to: &frames)
        try deflater.compress(frames, appendingTo: &compressed)
        frames.removeAll(keepingCapacity: true)
        try deflater.finish(appendingTo: &compressed)
        try compressed.withUnsafeBytes { try output($0) }
        compressed.removeAll()
        finished = true
    }

    private func flushIfLarge() throws {
        guard frames.count >= 64 << 10 else { return }
        try deflater.compress(frames, appendingTo: &compressed)
        frames.removeAll(keepingCapacity: true)
        if !compressed.isEmpty {
            try compressed.withUnsafeBytes { try output($0) }
            compressed.removeAll(keepingCapacity: true)
        }
    }
}

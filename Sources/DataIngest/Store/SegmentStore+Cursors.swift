import Foundation
import IngestCore
import IngestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Cursors: small opaque values keyed by a name, committed in the same
/// transaction as the records they describe (a `c` frame before its commit
/// frame, Docs/SegmentFormat.md), so a position and the data it covers are
/// durable together or not at all. The store keeps the latest committed
/// value of each name and recovers it at open: from the segments still on
/// disk and from `CURSORS`, where the sealer saves the cursors of every
/// segment it seals before the segment can be deleted.
///
/// ```swift
/// try store.commit { tx in
///     try tx.append(collection: "ForwardedLine", document: bson)
///     try tx.setCursor(Array("offset=812".utf8), named: "app.log")
/// }
/// store.cursor(named: "app.log")   // the bytes of the last committed value
/// ```
extension SegmentStore {
    /// The latest committed value of the cursor `name`, or `nil` if none was
    /// ever committed (or the last commit removed it with an empty value).
    public func cursor(named name: String) -> [UInt8]? {
        guarded.withLock { $0.state.cursors.value(name) }
    }

    /// Every cursor's latest committed value, by name.
    public var cursors: [String: [UInt8]] {
        guarded.withLock { $0.state.cursors.values }
    }

    static let cursorsFileName = "CURSORS"
    /// `"DICUR\r\n\u{1A}"`, version 1.
    static let cursorsMagic: [UInt8] = [0x44, 0x49, 0x43, 0x55, 0x52, 0x0D, 0x0A, 0x1A]

    /// Reads `CURSORS` (absent: none; unreadable: an error naming the fix,
    /// since silently forgetting positions would re-send or skip data).
    func loadCursorsFile() throws -> CursorTable {
        let path = directory + "/" + Self.cursorsFileName
        guard let data = FileManager.default.contents(atPath: path) else { return CursorTable() }
        guard let table = CursorTable(fileBytes: [UInt8](data)) else {
            throw SegmentStoreError(
                code: .corruptSegment,
                message:
                    "CURSORS is damaged (bad magic, length or checksum); restore it from a backup, or delete it to forget every cursor",
                path: path)
        }
        return table
    }

    /// Replaces `CURSORS` atomically (temporary file, fsync, rename, directory fsync).
    func writeCursorsFile(_ table: CursorTable) throws {
        try Self.writeFileAtomically(
            path: directory + "/" + Self.cursorsFileName, bytes: table.fileBytes(),
            directoryFD: directoryFD, fs: fs)
    }

    /// Saves the cursors of `segment` (being sealed, already durable as a
    /// sealed file) into `CURSORS` before its active file is deleted. Does
    /// nothing for a segment without cursors. Called only by the sealer.
    func persistCursors(of segment: ActiveSegment) throws {
        let table: CursorTable? = guarded.withLock { held in
            guard !segment.cursors.isEmpty else { return nil }
            var merged = held.state.persistedCursors
            merged.merge(segment.cursors)
            // A removal only needs to be kept while an older value may still be
            // read back from a segment on disk.
            let oldest = min(held.state.sealed.segments.first?.number ?? .max, held.state.sealQueue.first?.number ?? .max)
            merged.dropRemovals { $0 >> 32 < oldest }
            return merged
        }
        guard let table else { return }
        try writeCursorsFile(table)
        guarded.withLock { $0.state.persistedCursors = table }
    }

    /// Reads every event of `reader`, collecting the cursors of its committed
    /// transactions (a cursor frame belongs to the transaction whose commit
    /// frame follows it; one that no commit frame follows is not committed).
    /// On an error `table` holds the cursors of the transactions read before it.
    static func readAll(_ reader: SegmentReader, cursorsInto table: inout CursorTable) throws {
        var pending: [(String, [UInt8])] = []
        reader.onOptionalFrame = { type, payload in
            guard type == SegmentFormat.FrameType.cursor, let cursor = SegmentFormat.parseCursor(payload) else { return }
            pending.append(cursor)
        }
        defer { reader.onOptionalFrame = nil }
        while let event = try reader.next() {
            if case .commit(let commit) = event {
                for (name, value) in pending { table.set(name, value, transaction: commit.transactionNumber) }
                pending.removeAll()
            }
        }
    }
}

/// The latest value of each cursor with the number of the transaction that
/// committed it (a later transaction wins; an empty value is a removal).
struct CursorTable: Equatable {
    struct Entry: Equatable {
        var transaction: UInt64
        var value: [UInt8]
    }

    private(set) var entries: [String: Entry] = [:]

    var isEmpty: Bool { entries.isEmpty }

    func value(_ name: String) -> [UInt8]? {
        guard let entry = entries[name], !entry.value.isEmpty else { return nil }
        return entry.value
    }

    var values: [String: [UInt8]] {
        entries.compactMapValues { $0.value.isEmpty ? nil : $0.value }
    }

    mutating func set(_ name: String, _ value: [UInt8], transaction: UInt64) {
        if let existing = entries[name], existing.transaction > transaction { return }
        entries[name] = Entry(transaction: transaction, value: value)
    }

    mutating func merge(_ other: CursorTable) {
        for (name, entry) in other.entries { set(name, entry.value, transaction: entry.transaction) }
    }

    mutating func dropRemovals(where obsolete: (UInt64) -> Bool) {
        entries = entries.filter { !$0.value.value.isEmpty || !obsolete($0.value.transaction) }
    }

    /// The `CURSORS` file: magic, then per entry `transaction u64, name
    /// length u16, name, value length u32, value`, then the CRC-32 of all
    /// bytes before it (little-endian; entries in name order).
    func fileBytes() -> [UInt8] {
        var bytes = SegmentStore.cursorsMagic
        func append<T: FixedWidthInteger>(_ value: T) {
            withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
        }
        for name in entries.keys.sorted() {
            let entry = entries[name]!
            let nameBytes = Array(name.utf8)
            append(entry.transaction)
            append(UInt16(nameBytes.count))
            bytes.append(contentsOf: nameBytes)
            append(UInt32(entry.value.count))
            bytes.append(contentsOf: entry.value)
        }
        let crc = bytes.withUnsafeBytes { CRC32.update(0, $0) }
        append(crc)
        return bytes
    }

    init() {}

    /// Parses ``fileBytes()``; `nil` if anything does not fit.
    init?(fileBytes bytes: [UInt8]) {
        let magic = SegmentStore.cursorsMagic
        guard bytes.count >= magic.count + 4, bytes.starts(with: magic) else { return nil }
        let body = bytes.count - 4
        func read<T: FixedWidthInteger>(_: T.Type, _ offset: Int) -> T {
            var value: T = 0
            for i in 0..<MemoryLayout<T>.size { value |= T(bytes[offset + i]) << (8 * i) }
            return value
        }
        let stored: UInt32 = read(UInt32.self, body)
        guard stored == bytes[..<body].withUnsafeBytes({ CRC32.update(0, $0) }) else { return nil }
        var offset = magic.count
        while offset < body {
            guard offset + 10 <= body else { return nil }
            let transaction = read(UInt64.self, offset)
            let nameCount = Int(read(UInt16.self, offset + 8))
            offset += 10
            guard offset + nameCount + 4 <= body,
                let name = String(validating: bytes[offset..<(offset + nameCount)], as: UTF8.self)
            else { return nil }
            offset += nameCount
            let valueCount = Int(read(UInt32.self, offset))
            offset += 4
            guard offset + valueCount <= body else { return nil }
            entries[name] = Entry(transaction: transaction, value: Array(bytes[offset..<(offset + valueCount)]))
            offset += valueCount
        }
    }
}

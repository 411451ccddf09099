import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif

extension SegmentStore {
    /// The sealed segments awaiting upload, oldest first. Each file is a standard
    /// gzip file that can be sent as is; ``uploadBody(for:)`` gives the bytes
    /// to send (decrypted when the store is encrypted).
    public func pendingSegments() -> [PendingSegment] {
        guarded.withLock { $0.state.sealed.segments }
    }

    /// A streaming reader over a pending segment (memory stays flat whatever its size).
    /// Decrypts as it reads when the store is encrypted.
    package func reader(for segment: PendingSegment) throws -> SegmentReader {
        try sealedReader(path: segment.path)
    }

    /// The server has stored the whole segment: delete it.
    /// - Throws: ``SegmentStoreError/Code/unknownSegment`` if it is not pending.
    public func acknowledge(segment number: UInt64) throws {
        try guarded.withLock { held throws(SegmentStoreError) in
            guard let segment = held.state.sealed.segment(number) else {
                throw SegmentStoreError(
                    code: .unknownSegment, message: "segment \(number) is not pending (acknowledged, dropped or quarantined already)",
                    path: directory)
            }
            let rc = fs.unlink(segment.path)
            if rc != 0 && rc != -ENOENT {
                throw SegmentStoreError.io("deleting an acknowledged segment", path: segment.path, errno: -rc)
            }
            held.state.sealed.remove(number)
            held.state.countersSinceOpen.acknowledgedSegments += 1
            held.state.countersSinceOpen.acknowledgedObjects += segment.recordCount
            held.state.countersSinceOpen.acknowledgedBytes += segment.byteCount
            held.broadcast(.state)
        }
    }

    /// The server refused some records of the segment: those move to
    /// `quarantine/` with the server's reasons (a readable
    /// `N.rejected.seg.gz` and a `N.report.json`); the rest counts as
    /// acknowledged; the segment is deleted.
    ///
    /// ```swift
    /// try store.reject(segment: 42, records: [3: "temperature: expected double"])
    /// ```
    /// - Parameter records: record index in the segment (``SegmentRecord/index``) → reason.
    /// - Throws: `unknownSegment`; `invalidRecord` for an index not in the segment.
    public func reject(segment number: UInt64, records rejections: [Int: String]) throws {
        guard let segment = guarded.withLock({ $0.state.sealed.segment(number) }) else {
            throw SegmentStoreError(code: .unknownSegment, message: "segment \(number) is not pending", path: directory)
        }
        if let bad = rejections.keys.first(where: { $0 < 0 || $0 >= segment.recordCount }) {
            throw SegmentStoreError(
                code: .invalidRecord, message: "record \(bad) is not in segment \(number) (it holds \(segment.recordCount))",
                path: segment.path)
        }
        let name = Self.fileName(number)
        let recordsPath = "\(quarantineDirectory)/\(name).rejected.seg.gz"
        var report = QuarantineReport(
            kind: "rejected", segmentNumber: number, createdAtMillis: Int64(Date().timeIntervalSince1970 * 1000),
            error: nil, originalFile: nil, recordsFile: recordsPath, salvagedRecords: 0, incompleteRecords: 0, rejections: [])
        var rejectedBytes = 0
        do {
            let reader = try reader(for: segment)
            try writeSegmentFile(path: recordsPath, header: reader.header) { writer in
                while let event = try reader.next() {
                    guard case .record(let record) = event, let reason = rejections[record.index] else { continue }
                    try writer.append(collection: record.collection, document: record.document)
                    try writer.commit(transactionNumber: UInt64(record.index))
                    report.rejections.append(.init(index: record.index, collection: record.collection, reason: reason))
                    rejectedBytes += record.document.count
                }
            }
        } catch let error as SegmentError {
            // The segment became unreadable: quarantine it whole.
            removeSealed(number: number)
            quarantineCorrupt(path: segment.path, number: number, error: error)
            throw SegmentStoreError(
                code: .corruptSegment, message: "segment \(number) is corrupt and was quarantined: \(error)", path: segment.path)
        }
        try writeReport(report, name: "\(name).report.json")
        removeSealed(number: number)
        _ = fs.unlink(segment.path)
        guarded.withLock { held in
            held.state.countersSinceOpen.quarantinedSegments += 1
            held.state.countersSinceOpen.quarantinedObjects += report.rejections.count
            held.state.countersSinceOpen.quarantinedBytes += rejectedBytes
            held.state.countersSinceOpen.acknowledgedObjects += segment.recordCount - report.rejections.count
            held.state.countersSinceOpen.acknowledgedBytes += segment.byteCount
            held.state.countersSinceOpen.acknowledgedSegments += 1
        }
    }

    /// The quarantine's reports (rejected records and corrupt segments), oldest first.
    public func quarantineReports() -> [QuarantineReport] {
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: quarantineDirectory)) ?? [])
            .filter { $0.hasSuffix(".report.json") }.sorted()
        return names.compactMap { name in
            guard let data = FileManager.default.contents(atPath: "\(quarantineDirectory)/\(name)") else { return nil }
            return try? JSONDecoder().decode(QuarantineReport.self, from: data)
        }
    }

    /// Moves a pending segment that can no longer be read (for example an
    /// encrypted file changed after open) to quarantine, salvaging what verifies.
    func quarantineUnreadable(segment number: UInt64, error: Error) {
        guard let segment = guarded.withLock({ $0.state.sealed.segment(number) }) else { return }
        removeSealed(number: number)
        quarantineCorrupt(path: segment.path, number: number, error: error)
    }

    /// Takes segment `number` out of the sealed queue (its file is moved or deleted by the caller).
    func removeSealed(number: UInt64) {
        guarded.withLock { held in
            if held.state.sealed.remove(number) != nil { held.broadcast(.state) }
        }
    }

    /// Deletes the oldest sealed segment for the drop-oldest budget policy and
    /// logs it to `quarantine/dropped.jsonl`.
    func dropOldest(_ held: StoreState.Held) {
        let segment = held.state.sealed.removeOldest()
        _ = fs.unlink(segment.path)
        held.state.countersSinceOpen.droppedSegments += 1
        held.state.countersSinceOpen.droppedObjects += segment.recordCount
        held.state.countersSinceOpen.droppedBytes += segment.byteCount
        let line =
            "{\"segmentNumber\":\(segment.number),\"records\":\(segment.recordCount),\"bytes\":\(segment.byteCount),\"droppedAtMillis\":\(Int64(Date().timeIntervalSince1970 * 1000))}\n"
        let fd = Glibc.open(quarantineDirectory + "/dropped.jsonl", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
        if fd >= 0 {
            _ = Array(line.utf8).withUnsafeBytes { fs.writeAll(fd, $0) }
            Glibc.close(fd)
        }
    }

    /// Moves a corrupt sealed segment to quarantine, salvaging its readable records.
    func quarantineCorrupt(path: String, number: UInt64, error: Error) {
        let name = Self.fileName(number)
        let moved = "\(quarantineDirectory)/\(name).corrupt.seg.gz"
        var info = stat()
        let size = stat(path, &info) == 0 ? Int(info.st_size) : 0
        _ = fs.rename(path, moved)
        var report = QuarantineReport(
            kind: "corrupt", segmentNumber: number, createdAtMillis: Int64(Date().timeIntervalSince1970 * 1000),
            error: "\(error)", originalFile: moved, recordsFile: nil, salvagedRecords: 0, incompleteRecords: 0, rejections: [])
        // Salvage record by record: every frame whose checksum holds, up to the damage.
        if let reader = try? sealedReader(path: moved) {
            let salvagePath = "\(quarantineDirectory)/\(name).salvaged.seg.gz"
            try? writeSegmentFile(path: salvagePath, header: reader.header) { writer in
                do {
                    while let event = try reader.next() {
                        switch event {
                        case .record(let record):
                            try writer.append(collection: record.collection, document: record.document)
                            report.salvagedRecords += 1
                        case .commit(let commit):
                            try writer.commit(transactionNumber: commit.transactionNumber)
                        case .end:
                            break
                        }
                    }
                } catch is SegmentError {
                    // The damage: records after the last commit are kept, marked incomplete.
                }
                if writer.uncommittedRecordCount > 0 {
                    report.incompleteRecords = writer.uncommittedRecordCount
                    try writer.commit(transactionNumber: 0)
                }
            }
            if report.salvagedRecords > 0 { report.recordsFile = salvagePath } else { _ = fs.unlink(salvagePath) }
        }
        try? writeReport(report, name: "\(name).report.json")
        guarded.withLock { held in
            held.state.countersSinceOpen.quarantinedSegments += 1
            held.state.countersSinceOpen.quarantinedObjects += report.salvagedRecords
            held.state.countersSinceOpen.quarantinedBytes += size
        }
    }

    /// Writes a sealed-format file through a temporary file, synced and renamed.
    func writeSegmentFile(path: String, header: SegmentHeader, _ body: (SegmentWriter) throws -> Void) throws {
        let temporary = path + ".tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SegmentStoreError.io("creating a quarantine file", path: temporary, errno: errno) }
        var failure: Int32 = 0
        let fs = self.fs
        do {
            let writeFile = { (bytes: UnsafeRawBufferPointer) throws -> Void in
                let rc = fs.writeAll(fd, bytes)
                if rc < 0 { throw SegmentStoreError.io("writing a quarantine file", path: temporary, errno: Int32(-rc)) }
            }
            // Quarantined objects stay encrypted in an encrypted store.
            let encrypter = try encryptionKey.map { key in
                try EncryptedFileWriter(
                    header: EncryptedFileHeader(kind: .sealed, storeId: storeId, segmentNumber: header.segmentNumber, key: key),
                    key: key, output: writeFile)
            }
            let writer = try SegmentWriter(header: header, level: configuration.compressionLevel) { bytes in
                if let encrypter { try encrypter.write(bytes) } else { try writeFile(bytes) }
            }
            try body(writer)
            try writer.finish()
            try encrypter?.finish()
            failure = -fs.fsync(fd)
        } catch {
            Glibc.close(fd)
            _ = fs.unlink(temporary)
            throw error
        }
        Glibc.close(fd)
        if failure == 0 { failure = -fs.rename(temporary, path) }
        if failure == 0 {
            let parent = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
            let parentFD = Glibc.open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if parentFD >= 0 {
                failure = -fs.fsync(parentFD)
                Glibc.close(parentFD)
            }
        }
        if failure != 0 {
            _ = fs.unlink(temporary)
            throw SegmentStoreError.io("saving a quarantine file", path: path, errno: failure)
        }
    }

    func writeReport(_ report: QuarantineReport, name: String) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let data = try encoder.encode(report)
        let quarantineFD = Glibc.open(quarantineDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if quarantineFD >= 0 { Glibc.close(quarantineFD) } }
        try Self.writeFileAtomically(
            path: "\(quarantineDirectory)/\(name)", bytes: [UInt8](data), directoryFD: quarantineFD >= 0 ? quarantineFD : directoryFD,
            fs: fs)
    }
}

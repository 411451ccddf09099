import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif

extension SegmentStore {
    /// Opens and recovers the store (called by ``open(_:)`` under the registry lock).
    convenience init(configuration: Configuration, canonicalDirectory directory: String) throws {
        let encryptionKey = try Self.encryptionKey(of: configuration)
        let lockFD = try Self.acquireLock(directory: directory)
        let directoryFD = Glibc.open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard directoryFD >= 0 else {
            let code = errno
            Glibc.close(lockFD)
            throw SegmentStoreError.io("opening the store directory", path: directory, errno: code)
        }
        do {
            try Self.checkEncryption(directory: directory, directoryFD: directoryFD, key: encryptionKey, fs: configuration.fileSystem)
            let storeId = try Self.loadOrCreateStoreId(directory: directory, directoryFD: directoryFD, fs: configuration.fileSystem)
            self.init(
                configuration: configuration, directory: directory, storeId: storeId, encryptionKey: encryptionKey,
                lockFD: lockFD, directoryFD: directoryFD)
        } catch {
            Glibc.close(directoryFD)
            Glibc.close(lockFD)
            throw error
        }
        do {
            try recover()
        } catch {
            Glibc.close(directoryFD)
            Glibc.close(lockFD)
            throw error
        }
        startThreads()
    }

    /// Takes `LOCK` exclusively; the file holds the owner's pid.
    static func acquireLock(directory: String) throws -> Int32 {
        let path = directory + "/LOCK"
        let fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SegmentStoreError.io("opening the lock file", path: path, errno: errno) }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let code = errno
            var buffer = [UInt8](repeating: 0, count: 32)
            let n = pread(fd, &buffer, 31, 0)
            Glibc.close(fd)
            let text = n > 0 ? String(decoding: buffer[..<n], as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) : ""
            let pid = Int32(text)
            guard code == EWOULDBLOCK else { throw SegmentStoreError.io("locking the store", path: path, errno: code) }
            throw SegmentStoreError(
                code: .locked,
                message:
                    "the store is open in another process (pid \(pid.map(String.init) ?? "unknown")); close it there or use another directory",
                path: directory, pid: pid)
        }
        let text = Array("\(getpid())\n".utf8)
        Glibc.ftruncate(fd, 0)
        _ = text.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        return fd
    }

    static func loadOrCreateStoreId(directory: String, directoryFD: Int32, fs: any StoreFileSystem) throws -> SegmentStoreID {
        let path = directory + "/STORE_ID"
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let id = SegmentStoreID(uuidString: text) else {
                throw SegmentStoreError(
                    code: .corruptSegment,
                    message: "STORE_ID does not hold a UUID (\"\(text)\"); restore it from a backup or remove the store", path: path)
            }
            return id
        }
        let id = SegmentStoreID.random()
        try writeFileAtomically(path: path, bytes: Array((id.uuidString + "\n").utf8), directoryFD: directoryFD, fs: fs)
        return id
    }

    /// Writes `bytes` to `path` via a synced temporary file and a rename.
    static func writeFileAtomically(path: String, bytes: [UInt8], directoryFD: Int32, fs: any StoreFileSystem) throws {
        let temporary = path + ".tmp"
        let fd = Glibc.open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw SegmentStoreError.io("creating a file", path: temporary, errno: errno) }
        var rc = bytes.withUnsafeBytes { fs.writeAll(fd, $0) }
        if rc == 0 { rc = Int(fs.fsync(fd)) }
        Glibc.close(fd)
        if rc == 0 { rc = Int(fs.rename(temporary, path)) }
        if rc == 0 { rc = Int(fs.fsync(directoryFD)) }
        guard rc == 0 else {
            _ = fs.unlink(temporary)
            throw SegmentStoreError.io("writing a file", path: path, errno: Int32(-rc))
        }
    }

    func writeSequenceFile(reserveUpTo number: UInt64) throws {
        try Self.writeFileAtomically(path: directory + "/SEQUENCE", bytes: Array("\(number)\n".utf8), directoryFD: directoryFD, fs: fs)
    }

    /// Verifies sealed segments, repairs and queues active ones, reserves numbers.
    func recover() throws {
        try? FileManager.default.createDirectory(
            atPath: quarantineDirectory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        var reserved: UInt64 = 1
        if let data = FileManager.default.contents(atPath: directory + "/SEQUENCE"),
            let value = UInt64(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        {
            reserved = value
        }
        let persisted = try loadCursorsFile()
        var cursors = persisted
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        var maxSeen: UInt64 = 0
        var sealedFound: [PendingSegment] = []
        var activeNames: [(UInt64, String)] = []
        for name in names.sorted() {
            let path = directory + "/" + name
            if name.hasSuffix(".tmp") {
                _ = fs.unlink(path)  // an interrupted seal or atomic write
            } else if name.hasSuffix(".seg.gz"), let number = UInt64(name.dropLast(7)) {
                maxSeen = max(maxSeen, number)
                if let (segment, found) = try verifySealed(path: path, number: number) {
                    sealedFound.append(segment)
                    cursors.merge(found)
                }
            } else if name.hasSuffix(".active"), let number = UInt64(name.dropLast(7)) {
                maxSeen = max(maxSeen, number)
                activeNames.append((number, path))
            }
        }
        let sealedNumbers = Set(sealedFound.map(\.number))
        var leftovers: [ActiveSegment] = []
        for (number, path) in activeNames {
            if sealedNumbers.contains(number) {
                _ = fs.unlink(path)  // sealed and durable; the crash came before the delete
            } else if let segment = try recoverActive(path: path, number: number) {
                leftovers.append(segment)
                cursors.merge(segment.cursors)
            }
        }
        let next = max(reserved, maxSeen + 1)
        try writeSequenceFile(reserveUpTo: next + 1024)
        guarded.withLock { held in
            held.state.sealed = SealedQueue(sealedFound)
            held.state.sealQueue = leftovers.sorted { $0.number < $1.number }
            held.state.nextSegmentNumber = next
            held.state.reservedSegmentNumber = next + 1024
            held.state.cursors = cursors
            held.state.persistedCursors = persisted
        }
    }

    /// Reads a sealed segment completely; a corrupt one is quarantined. An
    /// encrypted segment in a store opened without a key is an error, never
    /// quarantined (the store-level check normally catches that first).
    func verifySealed(path: String, number: UInt64) throws -> (PendingSegment, CursorTable)? {
        do {
            let reader = try sealedReader(path: path)
            var cursors = CursorTable()
            try Self.readAll(reader, cursorsInto: &cursors)
            guard reader.header.segmentNumber == number else {
                throw SegmentError(
                    code: .malformedFrame, message: "the header names segment \(reader.header.segmentNumber), the file name \(number)")
            }
            var info = stat()
            stat(path, &info)
            return (
                PendingSegment(
                    number: number, path: path, byteCount: Int(info.st_size),
                    recordCount: reader.recordCount, transactionCount: reader.transactionCount), cursors
            )
        } catch let error as SegmentError where error.code == .keyRequired {
            throw SegmentStoreError(
                code: .encryptionKeyRequired, message: "segment \(number) is encrypted: open the store with its encryption key", path: path)
        } catch {
            quarantineCorrupt(path: path, number: number, error: error)
            return nil
        }
    }

    /// Cuts a torn tail back to the last commit; returns the segment to seal, if
    /// it holds any transaction.
    func recoverActive(path: String, number: UInt64) throws -> ActiveSegment? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        let fileSize = Int(info.st_size)
        var validLength = 0
        var records = 0
        var transactions = 0
        var headerRead = false
        var formatVersion = SegmentFormat.version
        var cursors = CursorTable()
        var scanError: Error?
        var decrypting: DecryptingByteSource?
        do {
            var source: SegmentByteSource = try FileByteSource(path: path)
            if let encryptionKey {
                // Block ends map the last commit back to a file offset.
                let decrypter = try DecryptingByteSource(source, key: encryptionKey, kind: .stream, recordBlockEnds: true)
                decrypting = decrypter
                source = decrypter
            }
            let reader = try SegmentReader(source: source, requiresEnd: false)
            headerRead = true
            formatVersion = reader.header.formatVersion
            defer {
                validLength =
                    decrypting.map { $0.fileOffset(forPlaintextOffset: reader.offsetAfterLastCommit) }
                    ?? reader.offsetAfterLastCommit
                records = reader.recordCount - reader.uncommittedRecordCount
                transactions = reader.transactionCount
            }
            // Cursors of transactions cut off below were never committed: only
            // a commit frame adds a transaction's cursors to the table.
            try Self.readAll(reader, cursorsInto: &cursors)
        } catch let error as SegmentError where error.code == .keyRequired {
            throw SegmentStoreError(
                code: .encryptionKeyRequired, message: "active segment \(number) is encrypted: open the store with its encryption key",
                path: path)
        } catch {
            scanError = error
        }
        // A tail cut inside a frame is a torn write: those bytes were never
        // committed. So is a frame with a sector of zeros in it: what a power
        // cut leaves of unsynced writes (isUnsyncedTail). Anything else (a bad checksum, garbage, an encrypted block
        // that fails authentication) is damage that may hide committed
        // transactions: keep those bytes in quarantine.
        if let scanError, (scanError as? SegmentError)?.code != .truncated, fileSize > validLength,
            !Self.isUnsyncedTail(
                path: path, at: validLength, failure: (scanError as? SegmentError)?.offset,
                fileSize: fileSize, encrypted: encryptionKey != nil)
        {
            saveDamagedTail(path: path, number: number, from: validLength, error: scanError)
        }
        guard headerRead, transactions > 0 else {
            // No committed transaction (a crash while creating the file).
            _ = fs.unlink(path)
            return nil
        }
        if fileSize > validLength {
            let fd = Glibc.open(path, O_WRONLY | O_CLOEXEC)
            guard fd >= 0 else { throw SegmentStoreError.io("opening a torn active segment", path: path, errno: errno) }
            defer { Glibc.close(fd) }
            var rc = fs.ftruncate(fd, validLength)
            if rc == 0 { rc = fs.fsync(fd) }
            guard rc == 0 else { throw SegmentStoreError.io("cutting a torn active segment", path: path, errno: -rc) }
        }
        let segment = ActiveSegment(
            number: number, path: path, fd: -1, size: validLength, recordCount: records, transactionCount: transactions,
            formatVersion: formatVersion)
        segment.cursors = cursors
        return segment
    }

    /// Copies the bytes of an active segment from `offset` to its end into
    /// `quarantine/N.damaged-active.bin` with a report.
    func saveDamagedTail(path: String, number: UInt64, from offset: Int, error: Error) {
        let name = Self.fileName(number)
        let target = "\(quarantineDirectory)/\(name).damaged-active.bin"
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        guard (try? handle.seek(toOffset: UInt64(offset))) != nil,
            let tail = try? handle.readToEnd()
        else { return }
        let quarantineFD = Glibc.open(quarantineDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        defer { if quarantineFD >= 0 { Glibc.close(quarantineFD) } }
        try? Self.writeFileAtomically(path: target, bytes: [UInt8](tail), directoryFD: quarantineFD, fs: fs)
        let report = QuarantineReport(
            kind: "damagedActive", segmentNumber: number, createdAtMillis: Int64(Date().timeIntervalSince1970 * 1000),
            error: "\(error) (the active segment was cut back to byte \(offset); the \(tail.count) bytes after it are kept here)",
            originalFile: target, recordsFile: nil, salvagedRecords: 0, incompleteRecords: 0, rejections: [])
        try? writeReport(report, name: "\(name).report.json")
        guarded.withLock { held in
            held.state.countersSinceOpen.quarantinedSegments += 1
            held.state.countersSinceOpen.quarantinedBytes += tail.count
        }
    }

    func startThreads() {
        guarded.withLock { $0.state.threadsRunning = 2 }
        let sealer = Thread { [self] in sealLoop() }
        sealer.name = "SegmentStore.sealer"
        sealer.start()
        let syncer = Thread { [self] in syncLoop() }
        syncer.name = "SegmentStore.syncer"
        syncer.start()
    }
}

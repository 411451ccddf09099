import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport
import IngestTestSupport

/// Encryption at rest of the segment store (AES-256-GCM, Docs/SegmentFormat.md).
@Suite struct StoreEncryptionTests {
    static let key = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    static let otherKey = Data((0..<32).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ 1) })
    /// Bytes that must never appear on disk in an encrypted store.
    static let marker = Array("TOP-SECRET-READING".utf8)

    static func configuration(_ directory: String, key: Data? = key) -> SegmentStore.Configuration {
        var configuration = SegmentStore.Configuration(directory: directory)
        configuration.maxSegmentAgeMilliseconds = 60_000  // seal only on flush
        configuration.encryptionKey = key
        return configuration
    }

    /// A document `{t: id, s: "TOP-SECRET-READING"}`.
    static func secretDocument(_ id: Int64) -> [UInt8] {
        var document = BSONDocument()
        document["t"] = .int64(id)
        document["s"] = .string(String(decoding: marker, as: UTF8.self))
        return document.bsonBytes()
    }

    /// Every file under `directory` (recursively), path → bytes.
    static func files(_ directory: String) -> [String: [UInt8]] {
        var result: [String: [UInt8]] = [:]
        let enumerator = FileManager.default.enumerator(atPath: directory)
        while let name = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            let path = directory + "/" + name
            if FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue {
                result[name] = [UInt8](FileManager.default.contents(atPath: path) ?? Data())
            }
        }
        return result
    }

    static func containsMarker(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= marker.count else { return false }
        for i in 0...(bytes.count - marker.count) where bytes[i] == marker[0] {
            if Array(bytes[i..<(i + marker.count)]) == marker { return true }
        }
        return false
    }

    /// Copies the store's files (as a crash would leave them) into `target`.
    static func snapshot(_ source: String, to target: String, change: (String, inout [UInt8]) -> Void = { _, _ in }) throws {
        try FileManager.default.createDirectory(atPath: target, withIntermediateDirectories: true)
        for name in try FileManager.default.contentsOfDirectory(atPath: source) where name != "LOCK" && name != "quarantine" {
            var bytes = [UInt8](FileManager.default.contents(atPath: source + "/" + name) ?? Data())
            change(name, &bytes)
            try Data(bytes).write(to: URL(fileURLWithPath: target + "/" + name))
        }
    }

    @Test func roundTripWithAKeyNeverLeavesPlaintextOnDisk() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        var store = try SegmentStore.open(Self.configuration(path))
        #expect(store.isEncrypted)
        for id in 0..<20 { try store.commit(records: [("Secret", Self.secretDocument(Int64(id)))]) }
        // The active segment: encrypted before it is sealed.
        let active = try #require(Self.files(path).first { $0.key.hasSuffix(".active") })
        #expect(Array(active.value.prefix(8)) == EncryptedFileHeader.magic)
        #expect(!Self.containsMarker(active.value))
        try store.flush()
        for id in 20..<40 { try store.commit(records: [("Secret", Self.secretDocument(Int64(id)))]) }
        try store.close()

        for (name, bytes) in Self.files(path) {
            #expect(!Self.containsMarker(bytes), "\(name) holds plaintext")
            if name.hasSuffix(".seg.gz") { #expect(Array(bytes.prefix(8)) == EncryptedFileHeader.magic) }
        }
        store = try SegmentStore.open(Self.configuration(path))
        defer { try? store.close() }
        let segments = store.pendingSegments()
        #expect(segments.count == 2)
        var ids: [Int64] = []
        for segment in segments {
            // The upload body is the standard gzip segment the server reads.
            let body = try store.uploadBody(for: segment)
            #expect(Array(body.prefix(2)) == [0x1F, 0x8B])
            let fromBody = try SegmentReader(gzipBytes: [UInt8](body))
            let reader = try store.reader(for: segment)
            while let event = try reader.next() {
                #expect(try fromBody.next() == event)
                if case .record(let record) = event {
                    let document = try BSONDocument(bson: record.document)
                    #expect(document["s"] == .string(String(decoding: Self.marker, as: UTF8.self)))
                    if case .int64(let id)? = document["t"] { ids.append(id) }
                }
            }
            #expect(fromBody.header.storeId == store.storeId)
        }
        #expect(ids == Array(0..<40))
    }

    @Test func aWrongKeyIsAClearErrorAndChangesNothing() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        var store = try SegmentStore.open(Self.configuration(path))
        for id in 0..<5 { try TxDocument.commit(store, id: Int64(id)) }
        try store.close()
        let before = Self.files(path)
        #expect {
            try SegmentStore.open(Self.configuration(path, key: Self.otherKey))
        } throws: { error in
            guard let error = error as? SegmentStoreError else { return false }
            return error.code == .wrongEncryptionKey && error.message.contains("another key")
        }
        #expect(Self.files(path).keys.sorted() == before.keys.sorted())  // nothing quarantined or deleted
        store = try SegmentStore.open(Self.configuration(path))
        defer { try? store.close() }
        #expect(try StoreCheck.transactions(in: store) == Array(0..<5))
        #expect(store.quarantineReports().isEmpty)
    }

    @Test func aMissingKeyAndAKeyOnAPlaintextStoreAreClearErrors() throws {
        let dir = try TemporaryDirectory("crypt")
        let encrypted = try SegmentStore.open(Self.configuration(dir.path("encrypted")))
        try TxDocument.commit(encrypted, id: 1)
        try encrypted.close()
        #expect {
            try SegmentStore.open(Self.configuration(dir.path("encrypted"), key: nil))
        } throws: { error in
            (error as? SegmentStoreError)?.code == .encryptionKeyRequired
        }

        let plain = try SegmentStore.open(Self.configuration(dir.path("plain"), key: nil))
        try TxDocument.commit(plain, id: 1)
        try plain.close()
        #expect {
            try SegmentStore.open(Self.configuration(dir.path("plain")))
        } throws: { error in
            (error as? SegmentStoreError)?.code == .notEncrypted
        }
        // Both stores still hold their transaction.
        for (name, key) in [("encrypted", Self.key), ("plain", nil)] as [(String, Data?)] {
            let store = try SegmentStore.open(Self.configuration(dir.path(name), key: key))
            #expect(try StoreCheck.transactions(in: store) == [1])
            try store.close()
        }
    }

    @Test func theSameDirectoryOpenedTwiceInAProcessNeedsTheSameKey() throws {
        let dir = try TemporaryDirectory("crypt")
        let store = try SegmentStore.open(Self.configuration(dir.path("store")))
        defer { try? store.close() }
        let again = try SegmentStore.open(Self.configuration(dir.path("store")))
        #expect(again === store)
        try again.close()
        #expect { try SegmentStore.open(Self.configuration(dir.path("store"), key: Self.otherKey)) } throws: {
            ($0 as? SegmentStoreError)?.code == .wrongEncryptionKey
        }
        #expect { try SegmentStore.open(Self.configuration(dir.path("store"), key: nil)) } throws: {
            ($0 as? SegmentStoreError)?.code == .encryptionKeyRequired
        }
    }

    @Test func keysOfTheWrongSizeAreRefusedNamingThirtyTwoBytes() throws {
        let dir = try TemporaryDirectory("crypt")
        for size in [0, 16, 31, 33, 64] {
            #expect {
                try SegmentStore.open(Self.configuration(dir.path("s\(size)"), key: Data(repeating: 1, count: size)))
            } throws: { error in
                guard let error = error as? SegmentStoreError, error.code == .invalidEncryptionKey else { return false }
                return error.message.contains("exactly 32 bytes") && (size != 64 || error.message.contains("64-byte"))
            }
        }
    }

    @Test func aTamperedSealedSegmentIsQuarantinedAndLaterOnesAreDelivered() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        var store = try SegmentStore.open(Self.configuration(path))
        for id in 0..<30 {
            try TxDocument.commit(store, id: Int64(id))
            if id % 10 == 9 { try store.flush() }
        }
        let segments = store.pendingSegments()
        #expect(segments.count == 3)
        try store.close()
        // One flipped byte in the middle of the second segment.
        var damaged = [UInt8](FileManager.default.contents(atPath: segments[1].path)!)
        damaged[damaged.count / 2] ^= 0x01
        try Data(damaged).write(to: URL(fileURLWithPath: segments[1].path))

        store = try SegmentStore.open(Self.configuration(path))
        defer { try? store.close() }
        #expect(store.pendingSegments().map(\.number) == [segments[0].number, segments[2].number])
        #expect(try StoreCheck.transactions(in: store) == Array(0..<10) + Array(20..<30))
        let report = try #require(store.quarantineReports().first)
        #expect(report.kind == "corrupt" && report.segmentNumber == segments[1].number)
        #expect(report.error?.contains("authentication") == true)
        #expect(report.salvagedRecords == 0)  // nothing unauthenticated is ever decoded
        #expect(store.counters.quarantinedSegments == 1)
    }

    @Test func aTamperedSegmentIsNeverDecodedByAReader() throws {
        let dir = try TemporaryDirectory("crypt")
        let store = try SegmentStore.open(Self.configuration(dir.path("store")))
        defer { try? store.close() }
        for id in 0..<10 { try TxDocument.commit(store, id: Int64(id)) }
        try store.flush()
        let segment = try #require(store.pendingSegments().first)
        let original = [UInt8](FileManager.default.contents(atPath: segment.path)!)
        // Every position of the file: the header, a block header, ciphertext, the tag.
        for position in stride(from: 0, to: original.count, by: max(1, original.count / 40)) {
            var damaged = original
            damaged[position] ^= 0x20
            try Data(damaged).write(to: URL(fileURLWithPath: segment.path))
            #expect(throws: SegmentError.self, "byte \(position)") {
                let reader = try store.reader(for: segment)
                while try reader.next() != nil {}
            }
            #expect(throws: SegmentError.self, "byte \(position)") { _ = try store.uploadBody(for: segment) }
        }
        try Data(original).write(to: URL(fileURLWithPath: segment.path))
        #expect(try StoreCheck.transactions(in: store) == Array(0..<10))
    }

    /// Blocks cannot be reordered, dropped or copied between files.
    @Test func blocksCannotBeMovedOrSwappedBetweenFiles() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        let store = try SegmentStore.open(Self.configuration(path))
        for id in 0..<4 { try TxDocument.commit(store, id: Int64(id)) }
        let activeName = try #require(Self.files(path).keys.first { $0.hasSuffix(".active") })
        let bytes = Self.files(path)[activeName]!
        try store.close()
        let key = try SegmentEncryptionKey(bytes: Self.key)
        let source = try DecryptingByteSource(MemoryByteSource(bytes), key: key, kind: .stream, recordBlockEnds: true)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while try source.read(into: chunk) > 0 {}
        let ends = source.blockEnds.map(\.file)  // header end, then one block per commit
        #expect(ends.count == 6)
        let blocks = (1..<ends.count).map { Array(bytes[ends[$0 - 1]..<ends[$0]]) }
        // Swap transactions 1 and 2 (blocks 2 and 3).
        let swapped = Array(bytes[..<ends[2]]) + blocks[3] + blocks[2] + Array(bytes[ends[4]...])
        #expect(throws: SegmentError.self) {
            let reader = try SegmentReader(
                source: DecryptingByteSource(MemoryByteSource(swapped), key: key, kind: .stream), requiresEnd: false)
            while try reader.next() != nil {}
        }
        // The same blocks under another file's header (another salt and segment).
        let other = try EncryptedFileHeader(kind: .stream, storeId: .random(), segmentNumber: 1, key: key)
        #expect(throws: SegmentError.self) {
            let reader = try SegmentReader(
                source: DecryptingByteSource(MemoryByteSource(other.bytes + Array(bytes[72...])), key: key, kind: .stream),
                requiresEnd: false)
            while try reader.next() != nil {}
        }
    }

    /// A block header that passes its CRC but claims more bytes than the file
    /// holds is a truncation, read without allocating the claimed size.
    @Test func aBlockLongerThanTheFileIsTruncatedNotAllocated() throws {
        let key = try SegmentEncryptionKey(bytes: Self.key)
        let header = try EncryptedFileHeader(kind: .sealed, storeId: .random(), segmentNumber: 1, key: key)
        var bytes = header.bytes
        let claimed: UInt32 = 900 << 20
        withUnsafeBytes(of: claimed.littleEndian) { bytes += $0 }
        bytes.append(0)
        withUnsafeBytes(of: UInt64(0).littleEndian) { bytes += $0 }
        let crc = bytes.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[72..<85])) }
        withUnsafeBytes(of: crc.littleEndian) { bytes += $0 }
        bytes += [UInt8](repeating: 0xAB, count: 1000)
        let source = try DecryptingByteSource(MemoryByteSource(bytes), key: key, kind: .sealed)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        #expect { _ = try source.read(into: chunk) } throws: { ($0 as? SegmentError)?.code == .truncated }
    }

    /// The active segment cut at every byte offset of its last block recovers
    /// to the transaction before it, with no damage reported: a torn tail.
    @Test func tornTailAtEveryOffsetRecoversLikeWithoutEncryption() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        let source = try SegmentStore.open(Self.configuration(path))
        for id in 0..<2 { try TxDocument.commit(source, id: Int64(id)) }  // the last has 2 records
        let activeName = try #require(Self.files(path).keys.first { $0.hasSuffix(".active") })
        let bytes = Self.files(path)[activeName]!
        let key = try SegmentEncryptionKey(bytes: Self.key)
        let decrypter = try DecryptingByteSource(MemoryByteSource(bytes), key: key, kind: .stream, recordBlockEnds: true)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while try decrypter.read(into: chunk) > 0 {}
        let lastStart = decrypter.blockEnds[decrypter.blockEnds.count - 2].file
        #expect(lastStart > 72 && lastStart < bytes.count)
        // Inside the envelope header, the header block, then every offset of the last block.
        let headerBlockEnd = decrypter.blockEnds[1].file
        let cuts = [0, 5, 8, 71, 72, 80, headerBlockEnd - 1, headerBlockEnd] + Array(lastStart...bytes.count)
        for cut in cuts {
            let caseDir = dir.path("cut-\(cut)")
            try Self.snapshot(path, to: caseDir) { name, data in
                if name == activeName { data = Array(data[..<cut]) }
            }
            var configuration = Self.configuration(caseDir)
            configuration.durability = .none
            let store = try SegmentStore.open(configuration)
            let ids = try StoreCheck.transactions(in: store)
            let expected: [Int64] = cut == bytes.count ? [0, 1] : cut >= lastStart && lastStart > headerBlockEnd ? [0] : []
            #expect(ids == expected, "cut at \(cut)")
            #expect(store.quarantineReports().isEmpty, "a torn tail at \(cut) was reported as damage")
            try store.close()
            try FileManager.default.removeItem(atPath: caseDir)
        }
        try source.close()
    }

    /// A flipped byte in a complete block of the active segment is damage,
    /// not a torn tail: the prefix is recovered, the rest kept in quarantine.
    @Test func aTamperedActiveSegmentKeepsItsPrefixAndQuarantinesTheRest() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        let source = try SegmentStore.open(Self.configuration(path))
        for id in 0..<6 { try TxDocument.commit(source, id: Int64(id)) }
        let activeName = try #require(Self.files(path).keys.first { $0.hasSuffix(".active") })
        let bytes = Self.files(path)[activeName]!
        let key = try SegmentEncryptionKey(bytes: Self.key)
        let decrypter = try DecryptingByteSource(MemoryByteSource(bytes), key: key, kind: .stream, recordBlockEnds: true)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 1)
        defer { chunk.deallocate() }
        while try decrypter.read(into: chunk) > 0 {}
        let ends = decrypter.blockEnds.map(\.file)  // [72, header block, tx0, ..., tx5]
        // Damage the ciphertext of transaction 3's block, then its block header.
        for (label, position) in [("ciphertext", ends[4] + 25), ("block header", ends[4] + 2)] {
            let caseDir = dir.path("damaged-\(label.count)")
            try Self.snapshot(path, to: caseDir) { name, data in
                if name == activeName { data[position] ^= 0x01 }
            }
            let store = try SegmentStore.open(Self.configuration(caseDir))
            #expect(try StoreCheck.transactions(in: store) == [0, 1, 2], "\(label)")
            let report = try #require(store.quarantineReports().first)
            #expect(report.kind == "damagedActive")
            #expect(report.error?.contains(label == "ciphertext" ? "authentication" : "checksum") == true, "\(report.error ?? "")")
            let kept = [UInt8](FileManager.default.contents(atPath: try #require(report.originalFile)) ?? Data())
            #expect(kept.count == bytes.count - ends[4])  // the encrypted tail, kept as it was
            #expect(!Self.containsMarker(kept))
            try store.close()
        }
        try source.close()
    }

    @Test func quarantinedObjectsStayEncrypted() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        let store = try SegmentStore.open(Self.configuration(path))
        defer { try? store.close() }
        try store.commit(records: (0..<3).map { ("Secret", Self.secretDocument(Int64($0))) })
        try store.flush()
        let segment = try #require(store.pendingSegments().first)
        try store.reject(segment: segment.number, records: [1: "a reason"])
        for (name, bytes) in Self.files(path) { #expect(!Self.containsMarker(bytes), "\(name) holds plaintext") }
        let report = try #require(store.quarantineReports().first)
        let reader = try store.sealedReader(path: try #require(report.recordsFile))
        var documents: [BSONDocument] = []
        while let event = try reader.next() { if case .record(let r) = event { documents.append(try BSONDocument(bson: r.document)) } }
        #expect(documents.map { $0["t"] } == [.int64(1)])
    }

    /// Found by the decrypt fuzz target (IngestCoreTests.FuzzRegressionTests):
    /// a sealed file of more than one block (gzip over the sealer's 256 KiB,
    /// rejected objects over the quarantine's 64 KiB) could not be read back
    /// (every block after the first failed authentication), so the store
    /// quarantined its own segment as corrupt on the next open.
    @Test func segmentsAndQuarantineFilesOfSeveralBlocksReadBack() throws {
        let dir = try TemporaryDirectory("crypt")
        let path = dir.path("store")
        let writer = try SegmentStore.open(Self.configuration(path))
        // 160 documents of 2 KiB of incompressible bytes: about 330 KiB of gzip.
        var state: UInt64 = 0x9E37_79B9_7F4A_7C15
        for id in 0..<160 {
            var noise = [UInt8](repeating: 0, count: 2048)
            for i in noise.indices {
                state = state &* 6364136223846793005 &+ 1442695040888963407
                noise[i] = UInt8(truncatingIfNeeded: state >> 56)
            }
            var document = BSONDocument()
            document["t"] = .int64(Int64(id))
            document["noise"] = .binary(BSONBinary(subtype: 0, bytes: noise))
            try writer.commit(records: [("Noise", document.bsonBytes())])
        }
        try writer.flush()
        try writer.close()

        // Reopened: the sealed segment is not taken for damage.
        let store = try SegmentStore.open(Self.configuration(path))
        defer { try? store.close() }
        #expect(store.quarantineReports().isEmpty)
        let segment = try #require(store.pendingSegments().first)
        #expect(segment.byteCount > 300 << 10)
        let body = try store.uploadBody(for: segment)
        let fromBody = try SegmentReader(gzipBytes: [UInt8](body), limits: .init(gzip: .unlimited))
        var count = 0
        let reader = try store.reader(for: segment)
        while let event = try reader.next() {
            #expect(try fromBody.next() == event)
            if case .record(_) = event { count += 1 }
        }
        #expect(count == 160)
        // 40 rejected records (80 KiB) go to an encrypted quarantine file of two blocks.
        var rejections: [Int: String] = [:]
        for index in stride(from: 0, to: 160, by: 4) { rejections[index] = "rejected" }
        try store.reject(segment: segment.number, records: rejections)
        let report = try #require(store.quarantineReports().first)
        #expect(report.kind == "rejected")
        let quarantined = try store.sealedReader(path: try #require(report.recordsFile))
        var ids: [BSON?] = []
        while let event = try quarantined.next() { if case .record(let r) = event { ids.append(try BSONDocument(bson: r.document)["t"]) } }
        let expectedIds: [BSON?] = stride(from: 0, to: 160, by: 4).map { BSON.int64(Int64($0)) }
        #expect(ids == expectedIds)
    }
}

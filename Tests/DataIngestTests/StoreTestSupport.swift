import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
#endif
import IngestSupport
import IngestTestSupport

/// The crash child's document: `{t: Int64 id, k: Int32 index, n: Int32 count}`, built by hand.
enum TxDocument {
    static func make(id: Int64, k: Int32, n: Int32) -> [UInt8] {
        var out: [UInt8] = [30, 0, 0, 0]
        out += [0x12, UInt8(ascii: "t"), 0]
        withUnsafeBytes(of: id.littleEndian) { out += $0 }
        out += [0x10, UInt8(ascii: "k"), 0]
        withUnsafeBytes(of: k.littleEndian) { out += $0 }
        out += [0x10, UInt8(ascii: "n"), 0]
        withUnsafeBytes(of: n.littleEndian) { out += $0 }
        out.append(0)
        return out
    }

    static func parse(_ doc: [UInt8]) -> (id: Int64, k: Int32, n: Int32)? {
        guard doc.count == 30, doc[4] == 0x12, doc[5] == UInt8(ascii: "t"), doc[15] == 0x10, doc[22] == 0x10 else { return nil }
        return doc.withUnsafeBytes { raw in
            (
                Int64(littleEndian: raw.loadUnaligned(fromByteOffset: 7, as: Int64.self)),
                Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 18, as: Int32.self)),
                Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 25, as: Int32.self))
            )
        }
    }

    /// Commits transaction `id` (`id % 3 + 1` records), as the crash child does.
    @discardableResult
    static func commit(_ store: SegmentStore, id: Int64) throws -> CommitReceipt? {
        let n = Int32(id % 3 + 1)
        return try store.commit { tx in
            for k in 0..<n { try tx.append(collection: "Tx", document: make(id: id, k: k, n: n)) }
        }
    }
}

enum StoreCheck {
    /// Every transaction in the store's pending segments (after a flush), checked
    /// whole: returns the ids in order; records issues for partial transactions.
    static func transactions(in store: SegmentStore, acknowledge: Bool = false) throws -> [Int64] {
        try store.flush()
        var ids: [Int64] = []
        for segment in store.pendingSegments() {
            let reader = try store.reader(for: segment)
            var current: [(id: Int64, k: Int32, n: Int32)] = []
            while let event = try reader.next() {
                switch event {
                case .record(let record):
                    guard let parsed = TxDocument.parse(record.document) else {
                        Issue.record("unreadable document in segment \(segment.number)")
                        continue
                    }
                    current.append(parsed)
                case .commit(let commit):
                    let id = current.first?.id ?? -1
                    let whole =
                        current.count == Int(id % 3 + 1)
                        && current.enumerated().allSatisfy {
                            $0.element.id == id && $0.element.k == Int32($0.offset) && $0.element.n == Int32(current.count)
                        }
                    #expect(whole, "transaction \(id) in segment \(segment.number) is partial: \(current)")
                    #expect(commit.recordCount == current.count)
                    ids.append(id)
                    current.removeAll()
                case .end:
                    #expect(current.isEmpty)
                }
            }
            if acknowledge { try store.acknowledge(segment: segment.number) }
        }
        return ids
    }

    /// Resident set size of this process in bytes.
    static func residentBytes() -> Int {
        guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let fields = text.split(separator: " ")
        return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
    }

    /// The crash child next to the test binary.
    static var childPath: String {
        let exe = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return exe.deletingLastPathComponent().appendingPathComponent("store-crash-child").path
    }
}

/// A file system that injects ENOSPC, short writes and failing syncs/truncates.
final class FaultyFileSystem: StoreFileSystem, @unchecked Sendable {  // state in a LockedBox
    struct Faults {
        /// Bytes that may still be written before writes fail with ENOSPC (nil: unlimited).
        var bytesUntilFull: Int?
        /// Largest count a single write accepts (short writes).
        var maxWriteSize = Int.max
        var failSync = false
        var failTruncate = false
        var writes = 0
        var allocations = 0
    }
    let faults = LockedBox(Faults())
    let real = PosixFileSystem()

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        let allowed: Int = faults.withLock { f in
            f.writes += 1
            var n = min(bytes.count, f.maxWriteSize)
            if let left = f.bytesUntilFull {
                if left == 0 { return -Int(ENOSPC) }
                n = min(n, left)
                f.bytesUntilFull = left - n
            }
            return n
        }
        guard allowed >= 0 else { return allowed }
        return real.write(fd, UnsafeRawBufferPointer(rebasing: bytes[..<allowed]))
    }

    func fdatasync(_ fd: Int32) -> Int32 {
        faults.withLock { $0.failSync } ? -EIO : real.fdatasync(fd)
    }

    func fsync(_ fd: Int32) -> Int32 {
        faults.withLock { $0.failSync } ? -EIO : real.fsync(fd)
    }

    func ftruncate(_ fd: Int32, _ length: Int) -> Int32 {
        faults.withLock { $0.failTruncate } ? -EIO : real.ftruncate(fd, length)
    }

    func rename(_ from: String, _ to: String) -> Int32 { real.rename(from, to) }

    /// Preallocation takes room like a write, all or nothing (as `posix_fallocate`).
    func allocate(_ fd: Int32, offset: Int, length: Int) -> Int32 {
        let allowed: Bool = faults.withLock { f in
            f.allocations += 1
            guard let left = f.bytesUntilFull else { return true }
            guard length <= left else { return false }
            f.bytesUntilFull = left - length
            return true
        }
        return allowed ? real.allocate(fd, offset: offset, length: length) : -ENOSPC
    }
}

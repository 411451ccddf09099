import IngestCore
#if canImport(Glibc)
import Glibc
#endif

/// An uncompressed segment file being appended to, or waiting to be sealed.
///
/// `size` and the counts change only under the store's monitor (written by the
/// commit leader, which is the only writer of the file).
// @unchecked Sendable: mutable fields are guarded by the store's monitor (StoreStateGuard).
final class ActiveSegment: @unchecked Sendable {
    let number: UInt64
    let path: String
    /// The segment format version of its header: ``SegmentFormat/version``
    /// for a segment this code created, possibly 1 for one recovered at open
    /// (sealed as it is, with an end frame of its own version).
    let formatVersion: UInt16
    /// Open for appending while active; -1 for a leftover found at open.
    let fd: Int32
    /// Bytes (in the file, encrypted or not) up to the end of the last committed transaction.
    var size: Int
    var recordCount: Int
    var transactionCount: Int
    /// Monotonic time of the first commit (age-based sealing).
    var firstCommitAt: UInt64?
    /// Written since the last background sync.
    var dirty = false
    /// The directory entry of this new file is not yet synced.
    var needsDirectorySync = true
    /// Encrypts the blocks appended to this file (encrypted stores, while
    /// active); used only by the commit leader.
    let cipher: SegmentCipher?
    /// A shared, writable memory mapping of the file while it is active in a
    /// store that preallocates (nil: commits use `write(2)`). Commits are copied
    /// here by the leader, or by a committer holding the monitor while no
    /// leader is active; the sealer unmaps it after rotation.
    var mapping: UnsafeMutableRawPointer?
    /// Bytes mapped at `mapping` (may exceed `allocated`; only `..<allocated` is touched).
    var mappedLength = 0
    /// File bytes reserved with `allocate` (zeros after `size`).
    var allocated = 0
    /// The latest cursors its transactions committed (saved in `CURSORS` when it is sealed).
    var cursors = CursorTable()

    init(
        number: UInt64, path: String, fd: Int32, size: Int, recordCount: Int = 0, transactionCount: Int = 0,
        cipher: SegmentCipher? = nil, formatVersion: UInt16 = SegmentFormat.version
    ) {
        self.number = number
        self.path = path
        self.formatVersion = formatVersion
        self.fd = fd
        self.size = size
        self.cipher = cipher
        self.recordCount = recordCount
        self.transactionCount = transactionCount
    }

    /// Removes the memory mapping (once no commit can reach this segment).
    func unmap() {
        if let mapping { munmap(mapping, mappedLength) }
        mapping = nil
        mappedLength = 0
    }

    deinit {
        unmap()
        if fd >= 0 { close(fd) }
    }
}

/// A transaction waiting for the commit leader; results are set under the monitor.
final class PendingCommit {
    let bytes: [UInt8]
    let recordCount: Int
    let cursors: [(name: String, value: [UInt8])]
    var done = false
    var error: SegmentStoreError?
    var receipt: CommitReceipt?

    init(bytes: [UInt8], recordCount: Int, cursors: [(name: String, value: [UInt8])] = []) {
        self.bytes = bytes
        self.recordCount = recordCount
        self.cursors = cursors
    }
}

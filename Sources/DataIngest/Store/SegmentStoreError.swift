#if canImport(Glibc)
import Glibc
#endif
import IngestCore

/// An error from the segment store.
///
/// ```swift
/// do { try store.commit { tx in tx.append(collection: "WeatherSensor", document: bson) } }
/// catch let error as SegmentStoreError where error.code == .storageFull { /* back off */ }
/// ```
public struct SegmentStoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as an extensible code.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        /// The code's stable name.
        public let rawValue: String
        /// Creates a code with the given name.
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// Another process holds the store's lock (see ``SegmentStoreError/pid``).
        public static let locked = Code("locked")
        /// The disk budget (``SegmentStore/Configuration/maxPendingBytes``) is reached
        /// and the policy refused the write.
        public static let storageFull = Code("storageFull")
        /// A system call failed (see ``SegmentStoreError/errno``); for ENOSPC the
        /// transaction was not committed and the store is unchanged.
        public static let io = Code("io")
        /// A document or collection name is not acceptable (bad BSON length prefix,
        /// name too long).
        public static let invalidRecord = Code("invalidRecord")
        /// The store was closed.
        public static let closed = Code("closed")
        /// The segment is not pending (already acknowledged, dropped or quarantined).
        public static let unknownSegment = Code("unknownSegment")
        /// A segment file could not be read (the store quarantines it).
        public static let corruptSegment = Code("corruptSegment")
        /// ``SegmentStore/Configuration/encryptionKey`` is not 32 bytes.
        public static let invalidEncryptionKey = Code("invalidEncryptionKey")
        /// The store is encrypted with another key.
        public static let wrongEncryptionKey = Code("wrongEncryptionKey")
        /// The store is encrypted and no key was given.
        public static let encryptionKeyRequired = Code("encryptionKeyRequired")
        /// A key was given but the store holds segments written without encryption.
        public static let notEncrypted = Code("notEncrypted")
    }

    /// The kind of failure.
    public var code: Code
    /// What happened and what to do.
    public var message: String
    /// The file involved, if any.
    public var path: String?
    /// The `errno` of a failed system call, if any.
    public var errno: Int32?
    /// The process holding the lock, for ``Code/locked``.
    public var pid: Int32?

    /// Creates an error.
    public init(code: Code, message: String, path: String? = nil, errno: Int32? = nil, pid: Int32? = nil) {
        self.code = code
        self.message = message
        self.path = path
        self.errno = errno
        self.pid = pid
    }

    public var description: String {
        var text = "SegmentStoreError.\(code): \(message)"
        if let path { text += " [path: \(path)]" }
        if let errno { text += " [errno \(errno): \(String(cString: strerror(errno)))]" }
        if let pid { text += " [pid \(pid)]" }
        return text
    }

    static func io(_ what: String, path: String?, errno code: Int32) -> SegmentStoreError {
        let hint = code == ENOSPC ? "; the disk is full: free space, the transaction was not committed" : ""
        return SegmentStoreError(code: .io, message: "\(what) failed\(hint)", path: path, errno: code)
    }
}

import DataIngest
import Foundation
import IngestSupport

/// Where forwarding of one *file generation* stands (a file, and again after
/// a truncation of it): kept as a cursor in the segment store, committed in
/// the same transaction as the lines it covers (`Realm.setCursor`), so the
/// store holds a line if and only if its cursor says it was read.
///
/// A generation is known by its device and inode *and* a fingerprint of its
/// content: a SHA-256 of its first `fingerprintBytes` bytes (up to
/// `--fingerprint-bytes`, default 256; fewer while the file is shorter). A file with the
/// same inode and another fingerprint is another file (inode reuse, or a
/// copy-and-truncate rewrite); a file with another inode but the same full
/// fingerprint is the same content (a rotated copy, a `.gz` of it).
struct FileCursor: Codable, Equatable {
    /// Names the generation; part of each line's `_id` (`<source id>:<offset>`).
    var sourceId: String
    /// Where the file was last seen.
    var path: String
    var device: UInt64
    var inode: UInt64
    /// Hex of the first 16 bytes of the SHA-256 of the first `fingerprintBytes` bytes.
    var fingerprint: String
    var fingerprintBytes: Int
    /// The byte offset after the last committed line (in the decompressed
    /// content, for a `.gz` file).
    var offset: Int
    /// Lines committed from this generation.
    var lines: Int
    /// Rotated away (or gone) and read to its end: kept only so that the
    /// rotated file is not read again, forgotten once it is gone.
    var finished: Bool

    /// The cursor names of the forwarder's file generations start with this.
    static let namePrefix = "file:"
    var cursorName: String { Self.namePrefix + sourceId }

    func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array((try? encoder.encode(self)) ?? Data())
    }

    static func decode(_ bytes: [UInt8]) -> FileCursor? {
        try? JSONDecoder().decode(FileCursor.self, from: Data(bytes))
    }
}

enum Fingerprint {
    /// The fingerprint of `bytes`: hex of the first 16 bytes of their SHA-256.
    static func of(_ bytes: some Collection<UInt8>) -> String {
        Crypto.sha256(bytes).prefix(16).map { String(format: "%02x", $0) }.joined()
    }
}

/// A failure of the forwarder: the message says what happened and what to do.
struct ForwardError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

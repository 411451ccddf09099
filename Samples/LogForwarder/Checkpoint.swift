#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Where forwarding of one path stands: which file generation (device,
/// inode, source id) and how far its committed lines reach.
///
/// Saved with write-to-temporary + rename (atomic) after each committed
/// transaction, and before the first line of a new file generation is
/// committed, so that the ids of its lines are the same after a restart.
struct Checkpoint: Codable, Equatable {
    var path: String
    var device: UInt64
    var inode: UInt64
    /// Names this generation of the file; part of every line's `_id`.
    var sourceId: String
    /// The byte offset after the last committed line.
    var offset: Int
    /// Lines committed from this generation.
    var lines: Int

    static func load(_ file: String) -> Checkpoint? {
        guard let data = FileManager.default.contents(atPath: file) else { return nil }
        return try? JSONDecoder().decode(Checkpoint.self, from: data)
    }

    func save(_ file: String) throws {
        let data = try JSONEncoder().encode(self)
        let temporary = file + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else {
            throw ForwardError("cannot write the checkpoint \(temporary): \(String(cString: strerror(errno)))")
        }
        guard rename(temporary, file) == 0 else {
            throw ForwardError("cannot rename the checkpoint to \(file): \(String(cString: strerror(errno)))")
        }
    }
}

/// A failure of the forwarder: the message says what happened and what to do.
struct ForwardError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

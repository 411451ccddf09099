import Foundation

/// A directory of its own for one test, under the system's temporary
/// directory, removed (with everything in it) when the value is released.
///
/// ```swift
/// let directory = try TemporaryDirectory("store")
/// let store = try SegmentStore.open(SegmentStore.Configuration(directory: directory.path("store")))
/// let realmFile = directory.file("local.realm")
/// ```
package final class TemporaryDirectory: @unchecked Sendable {  // immutable after init
    /// The directory's path.
    package let path: String

    /// Creates `<tmp>/dataingest-<name>-<UUID>`.
    package init(_ name: String = "test") throws {
        path = NSTemporaryDirectory() + "dataingest-\(name)-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Takes over an existing directory (removed when the value is released).
    package init(adopting path: String) {
        self.path = path
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The directory as a file URL.
    package var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// The path of `name` inside the directory (not created).
    package func path(_ name: String) -> String { path + "/" + name }

    /// The URL of `name` inside the directory (not created).
    package func file(_ name: String) -> URL { url.appendingPathComponent(name) }
}

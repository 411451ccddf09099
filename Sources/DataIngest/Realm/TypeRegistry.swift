import Foundation
import IngestCore
import IngestSupport

/// The types automatic schema discovery knows. Swift on Linux cannot list
/// the subclasses of a class at run time, so types become known by being
/// registered (``Realm/registerTypes(_:)``) or by being listed in the
/// `objectTypes` of any configuration opened in this process.
enum TypeRegistry {
    private static let known = LockedBox<[ObjectBase.Type]>([])

    static func register(_ types: [ObjectBase.Type]) {
        known.withLock { known in
            for type in types where !known.contains(where: { $0 == type }) {
                known.append(type)
            }
        }
    }

    static var all: [ObjectBase.Type] { known.withLock { $0 } }
}

/// Which files are open in this process, and how, so that one file is
/// never open as a local and a synced realm at once.
enum OpenFileRegistry {
    private struct Entry {
        var synced: Bool
        var count: Int
    }

    private static let files = LockedBox<[String: Entry]>([:])

    static func claim(_ url: URL, synced: Bool) throws(RealmError) {
        let path = url.path
        let conflict: Bool = files.withLock { files in
            if let entry = files[path] {
                if entry.synced != synced { return true }
                files[path]?.count += 1
            } else {
                files[path] = Entry(synced: synced, count: 1)
            }
            return false
        }
        if conflict {
            let (open, wanted) = synced ? ("a local", "a synced") : ("a synced", "a local")
            throw RealmError(
                .fileOpenedAsLocalAndSynced, fileURL: url,
                message:
                    "\(path) is already open as \(open) realm and cannot also be opened as \(wanted) realm; give the local and the synced configuration different fileURLs"
            )
        }
    }

    static func release(_ url: URL) {
        files.withLock { files in
            guard let entry = files[url.path] else { return }
            if entry.count <= 1 { files[url.path] = nil } else { files[url.path]?.count -= 1 }
        }
    }
}

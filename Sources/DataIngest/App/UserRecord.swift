import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A user as kept on disk in `<app dir>/users/<id>/user.json` (mode 0600).
struct UserRecord: Codable, Sendable, Hashable {
    enum State: String, Codable, Sendable { case loggedIn, loggedOut, removed }
    var id: String
    var deviceId: String
    var provider: String
    var accessToken: String?
    var refreshToken: String?
    var state: State
    var loggedInAtMillis: Int64
    /// The user's folder under `users/` when it is not named `id`: a user
    /// created offline keeps the folder of its local id after the server
    /// gave it its own.
    var directory: String? = nil
    /// A user created by an anonymous login without a server: it has no
    /// tokens yet, and its session logs it in when the server answers.
    var awaitingLogin: Bool? = nil

    /// The folder name under `users/`, stable for the user's life.
    var key: String { directory ?? id }
}

/// Reads and writes the app's user records; files are written atomically
/// with mode 0600 inside directories of mode 0700, through the segment
/// store's file-system seam (``SegmentStore/Configuration/fileSystem``), and
/// durable when a save returns (the file and its directories synced).
struct UserRecordStore: Sendable {
    let appDirectory: String
    var fileSystem: any StoreFileSystem = PosixFileSystem()
    var usersDirectory: String { appDirectory + "/users" }

    func userDirectory(_ id: String) -> String { usersDirectory + "/" + id }
    func storeDirectory(_ id: String) -> String { userDirectory(id) + "/store" }

    func prepare() throws(AppError) {
        try makeDirectory(appDirectory)
        try makeDirectory(usersDirectory)
    }

    func makeDirectory(_ path: String) throws(AppError) {
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true,
                attributes: [.posixPermissions: 0o700])
        } catch {
            throw AppError(
                .metadata,
                "cannot create the metadata directory \(path): \(error.localizedDescription); set App.Configuration.metadataDirectory to a writable directory",
                underlyingError: error)
        }
    }

    func loadAll() -> [UserRecord] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: usersDirectory)) ?? []
        return names.sorted().compactMap { name in
            guard let data = FileManager.default.contents(atPath: userDirectory(name) + "/user.json"),
                var record = try? JSONDecoder().decode(UserRecord.self, from: data)
            else { return nil }
            if record.key != name { record.directory = name }
            return record
        }
    }

    func save(_ record: UserRecord) throws(AppError) {
        try makeDirectory(userDirectory(record.key))
        let data: Data
        do { data = try JSONEncoder().encode(record) } catch {
            throw AppError(.metadata, "cannot encode the user record: \(error)", underlyingError: error)
        }
        try writePrivate(userDirectory(record.key) + "/user.json", data)
    }

    /// Deletes the record of the user whose folder is `key`.
    func delete(_ key: String) {
        _ = fileSystem.unlink(userDirectory(key) + "/user.json")
    }

    /// The folder name (``UserRecord/key``) of the current user.
    var currentUserId: String? {
        guard let data = FileManager.default.contents(atPath: appDirectory + "/current-user") else { return nil }
        let id = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return id.isEmpty ? nil : id
    }

    func setCurrentUserId(_ id: String?) throws(AppError) {
        try writePrivate(appDirectory + "/current-user", Data((id ?? "").utf8))
    }

    /// Writes through a temporary file created with mode 0600, then renames.
    private func writePrivate(_ path: String, _ data: Data) throws(AppError) {
        let temporary = path + ".tmp"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw AppError(
                .metadata, "cannot write \(temporary): \(String(cString: strerror(errno))); check the metadata directory's permissions")
        }
        fchmod(fd, 0o600)
        var rc = data.withUnsafeBytes { fileSystem.writeAll(fd, $0) }
        if rc == 0 { rc = Int(fileSystem.fsync(fd)) }
        close(fd)
        if rc == 0 { rc = Int(fileSystem.rename(temporary, path)) }
        // The rename, and a new user's directory, are durable only once their
        // directories are synced: without it a power cut could bring back the
        // previous user.json (a refresh token the server has since rotated
        // away) or lose a new login, and with it the user's pending data.
        let directory = String(path[..<(path.lastIndex(of: "/") ?? path.endIndex)])
        for parent in [directory, usersDirectory, appDirectory] where rc == 0 {
            let parentFD = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            guard parentFD >= 0 else { continue }
            rc = Int(fileSystem.fsync(parentFD))
            close(parentFD)
            if parent == directory && directory == appDirectory { break }
        }
        guard rc == 0 else {
            _ = fileSystem.unlink(temporary)
            throw AppError(.metadata, "cannot save \(path): \(String(cString: strerror(Int32(-rc))))")
        }
    }
}

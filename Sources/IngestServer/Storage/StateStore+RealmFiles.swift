import IngestSupport

/// A Realm sync client's file: the identifier and salt the server gave it
/// in an `ident` message, for one app.
package struct RealmClientFileRecord: Sendable, Hashable {
    /// The client file identifier (from 1, never reused).
    package var fileIdent: UInt64
    /// The app the file syncs with.
    package var appId: String
    /// The salt the client must present with the identifier.
    package var salt: Int64
    /// The user whose session asked for it.
    package var userId: String
    /// Creation time, seconds since 1970.
    package var createdAt: Int64
}

extension StateStore {
    /// Allocates a new client file identifier for a Realm client of `appId`
    /// with a random positive salt (table `realm_client_files`; in the shared
    /// PostgreSQL state every server allocates from the same sequence).
    ///
    /// ```swift
    /// let file = try store.allocateRealmClientFile(appId: "weather", userId: user, now: now)
    /// send("ident \(session) \(file.fileIdent) \(file.salt)")
    /// ```
    package func allocateRealmClientFile(appId: String, userId: String, now: Int64) throws(StorageError) -> RealmClientFileRecord {
        let random: [UInt8]
        do {
            random = try Crypto.randomBytes(8)
        } catch {
            throw StorageError(.statement, "cannot generate a salt: \(error)", path: path)
        }
        // Positive and below 2^53, as realm-core's own server makes them.
        let salt = Int64(random.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } & ((1 << 53) - 1)) | 1
        let rows = try withConnection { db in
            try db.query(
                "INSERT INTO realm_client_files (app_id, salt, user_id, created_at) VALUES (?, ?, ?, ?) RETURNING file_ident",
                [.text(appId), .integer(salt), .text(userId), .integer(now)])
        }
        guard let ident = rows.first?.first?.integer, ident > 0 else {
            throw StorageError(.statement, "the state database returned no file identifier", path: path)
        }
        return RealmClientFileRecord(fileIdent: UInt64(ident), appId: appId, salt: salt, userId: userId, createdAt: now)
    }

    /// The Realm client file with `fileIdent`, if the server allocated it.
    package func realmClientFile(_ fileIdent: UInt64) throws(StorageError) -> RealmClientFileRecord? {
        guard fileIdent <= UInt64(Int64.max) else { return nil }
        return try withConnection { db in
            try db.query(
                "SELECT file_ident, app_id, salt, user_id, created_at FROM realm_client_files WHERE file_ident = ?",
                [.integer(Int64(fileIdent))]
            ).first.map { row in
                RealmClientFileRecord(
                    fileIdent: UInt64(row[0].integer ?? 0), appId: row[1].text ?? "", salt: row[2].integer ?? 0,
                    userId: row[3].text ?? "", createdAt: row[4].integer ?? 0)
            }
        }
    }
}

import IngestCore
import IngestSupport

extension StateStore {
    /// Creates a user. With an `identity`, fails with `.constraint` if the app
    /// already has a user with that provider and identity.
    package func createUser(
        appId: String, provider: AuthProvider, identity: String?, passwordHash: String?,
        now: Int64
    ) throws(StorageError) -> UserRecord {
        let user = UserRecord(
            id: ObjectId.generate().hex, appId: appId, provider: provider.rawValue, identity: identity,
            passwordHash: passwordHash, createdAt: now, isDisabled: false)
        try withConnection { db in
            try db.query(
                """
                INSERT INTO users (id, app_id, provider, identity, password_hash, created_at) VALUES (?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(user.id), .text(appId), .text(provider.rawValue), identity.map { .text($0) } ?? .null,
                    passwordHash.map { .text($0) } ?? .null, .integer(now),
                ])
        }
        return user
    }

    /// The user with `provider` and `identity` in `appId`, if any.
    package func user(appId: String, provider: AuthProvider, identity: String) throws(StorageError) -> UserRecord? {
        try withConnection { db in
            try db.query(
                """
                SELECT id, app_id, provider, identity, password_hash, created_at, disabled FROM users
                WHERE app_id = ? AND provider = ? AND identity = ?
                """, [.text(appId), .text(provider.rawValue), .text(identity)]
            ).first.map(UserRecord.init(row:))
        }
    }

    /// The user with `id`, if any.
    package func user(id: String) throws(StorageError) -> UserRecord? {
        try withConnection { db in
            try db.query(
                """
                SELECT id, app_id, provider, identity, password_hash, created_at, disabled FROM users WHERE id = ?
                """, [.text(id)]
            ).first.map(UserRecord.init(row:))
        }
    }

    /// Disables or re-enables a user. Returns whether the user exists.
    @discardableResult
    package func setUserDisabled(id: String, _ disabled: Bool) throws(StorageError) -> Bool {
        try withConnection { db in
            try db.query("UPDATE users SET disabled = ? WHERE id = ?", [.integer(disabled ? 1 : 0), .text(id)])
            return db.changes > 0
        }
    }

    /// The app's stored signing secret, generating `count` random bytes
    /// and storing them on first use.
    package func appSecret(appId: String, generatingBytes count: Int, now: Int64) throws(StorageError) -> [UInt8] {
        let candidate: [UInt8]
        do {
            candidate = try Crypto.randomBytes(count)
        } catch {
            throw StorageError(.statement, "cannot generate a secret: \(error.message)", path: path)
        }
        return try withConnection { db in
            try db.transaction {
                try db.query(
                    "INSERT OR IGNORE INTO app_secrets (app_id, secret, created_at) VALUES (?, ?, ?)",
                    [.text(appId), .blob(candidate), .integer(now)])
                guard
                    let secret = try db.query("SELECT secret FROM app_secrets WHERE app_id = ?", [.text(appId)])
                        .first?.first?.blob
                else { throw StorageError(.statement, "the app secret vanished after insert", path: path) }
                return secret
            }
        }
    }
}

extension UserRecord {
    init(row: [SQLiteValue]) {
        self.init(
            id: row[0].text ?? "", appId: row[1].text ?? "", provider: row[2].text ?? "", identity: row[3].text,
            passwordHash: row[4].text, createdAt: row[5].integer ?? 0, isDisabled: (row[6].integer ?? 0) != 0)
    }
}

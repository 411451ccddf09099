import IngestCore
import IngestSupport

extension StateStore {
    /// Stores a new API key by its hash, with a user of provider `api-key`
    /// that the key logs in as. Fails with `.constraint` if the app already
    /// has a key named `name`.
    package func insertAPIKey(appId: String, name: String, keyHash: [UInt8], now: Int64) throws(StorageError) -> APIKeyRecord {
        let keyId = ObjectId.generate().hex
        let userId = ObjectId.generate().hex
        try withConnection { db in
            try db.transaction {
                try db.query(
                    """
                    INSERT INTO users (id, app_id, provider, identity, password_hash, created_at) VALUES (?, ?, ?, ?, NULL, ?)
                    """, [.text(userId), .text(appId), .text(AuthProvider.apiKey.rawValue), .text(keyId), .integer(now)])
                try db.query(
                    """
                    INSERT INTO api_keys (id, app_id, name, key_hash, user_id, created_at) VALUES (?, ?, ?, ?, ?, ?)
                    """, [.text(keyId), .text(appId), .text(name), .blob(keyHash), .text(userId), .integer(now)])
            }
        }
        return APIKeyRecord(id: keyId, appId: appId, name: name, userId: userId, createdAt: now, revokedAt: nil)
    }

    /// The API key with `keyHash`, if any (revoked or not).
    package func apiKey(hash keyHash: [UInt8]) throws(StorageError) -> APIKeyRecord? {
        try withConnection { db in
            try db.query(
                "SELECT id, app_id, name, user_id, created_at, revoked_at FROM api_keys WHERE key_hash = ?",
                [.blob(keyHash)]
            ).first.map(APIKeyRecord.init(row:))
        }
    }

    /// The app's API keys, oldest first.
    package func apiKeys(appId: String) throws(StorageError) -> [APIKeyRecord] {
        try withConnection { db in
            try db.query(
                """
                SELECT id, app_id, name, user_id, created_at, revoked_at FROM api_keys WHERE app_id = ? ORDER BY created_at, id
                """, [.text(appId)]
            ).map(APIKeyRecord.init(row:))
        }
    }

    /// Revokes the app's key named `name` and the refresh tokens of its user.
    /// Returns whether a valid key was revoked.
    @discardableResult
    package func revokeAPIKey(appId: String, name: String, now: Int64) throws(StorageError) -> Bool {
        try withConnection { db in
            try db.transaction {
                guard
                    let userId = try db.query(
                        "SELECT user_id FROM api_keys WHERE app_id = ? AND name = ? AND revoked_at IS NULL",
                        [.text(appId), .text(name)]
                    ).first?.first?.text
                else { return false }
                try db.query(
                    "UPDATE api_keys SET revoked_at = ? WHERE app_id = ? AND name = ?",
                    [.integer(now), .text(appId), .text(name)])
                try db.query(
                    "UPDATE refresh_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
                    [.integer(now), .text(userId)])
                return true
            }
        }
    }
}

extension APIKeyRecord {
    init(row: [SQLiteValue]) {
        self.init(
            id: row[0].text ?? "", appId: row[1].text ?? "", name: row[2].text ?? "", userId: row[3].text ?? "",
            createdAt: row[4].integer ?? 0, revokedAt: row[5].integer)
    }
}

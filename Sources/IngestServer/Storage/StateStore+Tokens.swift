extension StateStore {
    /// Stores a refresh token by its hash.
    package func insertRefreshToken(_ record: RefreshTokenRecord) throws(StorageError) {
        try withConnection { db in
            try db.query(
                """
                INSERT INTO refresh_tokens (token_hash, app_id, user_id, device_id, created_at, expires_at, revoked_at)
                VALUES (?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .blob(record.tokenHash), .text(record.appId), .text(record.userId), .text(record.deviceId),
                    .integer(record.createdAt), .integer(record.expiresAt), record.revokedAt.map { .integer($0) } ?? .null,
                ])
        }
    }

    /// The refresh token with `tokenHash`, if any (revoked or not).
    package func refreshToken(hash tokenHash: [UInt8]) throws(StorageError) -> RefreshTokenRecord? {
        try withConnection { db in
            try db.query(
                """
                SELECT token_hash, app_id, user_id, device_id, created_at, expires_at, revoked_at
                FROM refresh_tokens WHERE token_hash = ?
                """, [.blob(tokenHash)]
            ).first.map { row in
                RefreshTokenRecord(
                    tokenHash: row[0].blob ?? [], appId: row[1].text ?? "", userId: row[2].text ?? "",
                    deviceId: row[3].text ?? "", createdAt: row[4].integer ?? 0,
                    expiresAt: row[5].integer ?? 0, revokedAt: row[6].integer)
            }
        }
    }

    /// Revokes the token with `tokenHash` if it is not revoked yet. Returns
    /// whether this call revoked it (false if unknown or already revoked).
    @discardableResult
    package func revokeRefreshToken(hash tokenHash: [UInt8], now: Int64) throws(StorageError) -> Bool {
        try withConnection { db in
            try db.query(
                "UPDATE refresh_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL",
                [.integer(now), .blob(tokenHash)])
            return db.changes > 0
        }
    }

    /// Atomically revokes `oldHash` (if still valid) and stores `replacement`.
    /// Returns false, storing nothing, if `oldHash` was already revoked: two
    /// concurrent rotations of one token cannot both succeed.
    package func rotateRefreshToken(oldHash: [UInt8], replacement: RefreshTokenRecord, now: Int64) throws(StorageError) -> Bool {
        try withConnection { db in
            try db.transaction {
                try db.query(
                    "UPDATE refresh_tokens SET revoked_at = ? WHERE token_hash = ? AND revoked_at IS NULL",
                    [.integer(now), .blob(oldHash)])
                guard db.changes > 0 else { return false }
                try db.query(
                    """
                    INSERT INTO refresh_tokens (token_hash, app_id, user_id, device_id, created_at, expires_at)
                    VALUES (?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .blob(replacement.tokenHash), .text(replacement.appId), .text(replacement.userId),
                        .text(replacement.deviceId), .integer(replacement.createdAt), .integer(replacement.expiresAt),
                    ])
                return true
            }
        }
    }

    /// Revokes every refresh token of `userId` (e.g. when a user is disabled). Returns how many.
    @discardableResult
    package func revokeRefreshTokens(userId: String, now: Int64) throws(StorageError) -> Int {
        try withConnection { db in
            try db.query(
                "UPDATE refresh_tokens SET revoked_at = ? WHERE user_id = ? AND revoked_at IS NULL",
                [.integer(now), .text(userId)])
            return db.changes
        }
    }

    /// Deletes tokens that expired or were revoked before `cutoff`. Returns how many.
    @discardableResult
    package func purgeRefreshTokens(before cutoff: Int64) throws(StorageError) -> Int {
        try withConnection { db in
            try db.query(
                "DELETE FROM refresh_tokens WHERE expires_at < ? OR revoked_at < ?",
                [.integer(cutoff), .integer(cutoff)])
            return db.changes
        }
    }
}

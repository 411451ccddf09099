import Foundation
import IngestCore
import IngestSupport

/// The server's state database: users, refresh tokens, API keys and
/// generated app secrets, in one SQLite file (`state.sqlite`).
///
/// One connection, serialized by a lock: auth traffic is small next to
/// uploads, and one writer keeps SQLite simple. Refresh tokens and API keys
/// are stored only as SHA-256 hashes; passwords only as scrypt hashes.
///
/// ```swift
/// let store = try StateStore(path: "/var/lib/ingest/state.sqlite")
/// let user = try store.createUser(appId: "a1", provider: .anonymous, identity: nil, passwordHash: nil, now: now)
/// ```
// @unchecked: the connection is only touched inside `lock.withLock`.
package final class StateStore: @unchecked Sendable {
    /// The database file.
    package let path: String
    private let lock = Lock()
    private var connection: (any StateDatabase)?

    /// The schema version this code writes, kept in `PRAGMA user_version`.
    static let schemaVersion: Int64 = 2

    /// Opens or creates the state database, creating its directory if needed.
    ///
    /// - Throws: ``StorageError`` if the directory or file cannot be created,
    ///   WAL cannot be enabled, or the file was written by a newer server.
    package init(path: String) throws(StorageError) {
        self.path = path
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty {
            do {
                // Private: the directory holds generated signing secrets.
                try PrivateFiles.makeDirectory(directory)
            } catch {
                throw StorageError(.open, "cannot create the state directory: \(error)", path: path)
            }
        }
        // Created 0600 before SQLite opens it: SQLite gives -wal and -shm its mode.
        do { try PrivateFiles.createFile(path) } catch {
            throw StorageError(.open, "cannot create the state database: \(error)", path: path)
        }
        let connection = try SQLiteConnection.stateDatabase(path: path)
        // SQLite gives the -wal and -shm files the database file's mode.
        try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        let version = try connection.query("PRAGMA user_version").first?.first?.integer ?? 0
        guard version <= StateStore.schemaVersion else {
            throw StorageError(
                .open,
                "the state database has schema version \(version), newer than this server "
                    + "(\(StateStore.schemaVersion)); upgrade the server", path: path)
        }
        if version < 1 {
            try connection.execute(
                """
                BEGIN IMMEDIATE;
                CREATE TABLE IF NOT EXISTS users (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    provider TEXT NOT NULL,
                    identity TEXT,
                    password_hash TEXT,
                    created_at INTEGER NOT NULL,
                    disabled INTEGER NOT NULL DEFAULT 0
                );
                CREATE UNIQUE INDEX IF NOT EXISTS users_identity ON users(app_id, provider, identity)
                    WHERE identity IS NOT NULL;
                CREATE TABLE IF NOT EXISTS refresh_tokens (
                    token_hash BLOB PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    device_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL,
                    expires_at INTEGER NOT NULL,
                    revoked_at INTEGER
                );
                CREATE INDEX IF NOT EXISTS refresh_tokens_user ON refresh_tokens(user_id);
                CREATE TABLE IF NOT EXISTS api_keys (
                    id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL,
                    name TEXT NOT NULL,
                    key_hash BLOB NOT NULL UNIQUE,
                    user_id TEXT NOT NULL REFERENCES users(id),
                    created_at INTEGER NOT NULL,
                    revoked_at INTEGER,
                    UNIQUE(app_id, name)
                );
                CREATE TABLE IF NOT EXISTS app_secrets (
                    app_id TEXT PRIMARY KEY,
                    secret BLOB NOT NULL,
                    created_at INTEGER NOT NULL
                );
                PRAGMA user_version = 1;
                COMMIT;
                """)
        }
        if version < 2 {
            // Realm sync clients' file identifiers (StateStore+RealmFiles.swift).
            try connection.execute(
                """
                BEGIN IMMEDIATE;
                CREATE TABLE IF NOT EXISTS realm_client_files (
                    file_ident INTEGER PRIMARY KEY AUTOINCREMENT,
                    app_id TEXT NOT NULL,
                    salt INTEGER NOT NULL,
                    user_id TEXT NOT NULL,
                    created_at INTEGER NOT NULL
                );
                PRAGMA user_version = 2;
                COMMIT;
                """)
        }
        self.connection = connection
    }

    /// Opens the state tables in PostgreSQL (created if missing), shared by
    /// every ingest server configured with the same `sharedState`
    /// (Storage/PostgresStateDatabase.swift, see Docs/Deployment.md).
    ///
    /// - Throws: ``StorageError`` `.open` if PostgreSQL cannot be reached.
    package init(postgres connection: String) throws(StorageError) {
        let database = try PostgresStateDatabase(connection: connection)
        path = database.displayName
        self.connection = database
    }

    deinit { close() }

    /// Finalizes statements and closes the database. Later calls throw `.closed`.
    package func close() {
        lock.withLock {
            connection?.close()
            connection = nil
        }
    }

    /// Runs `body` with the connection under the lock, mapping errors to ``StorageError``.
    @discardableResult
    func withConnection<T>(_ body: (any StateDatabase) throws -> T) throws(StorageError) -> T {
        lock.lock()
        defer { lock.unlock() }
        guard let connection else { throw StorageError(.closed, "the state database is closed", path: path) }
        do {
            return try body(connection)
        } catch let error as StorageError {
            throw error
        } catch {
            throw StorageError(.statement, "\(error)", path: path)
        }
    }
}

// MARK: - Records

/// A user of one app.
package struct UserRecord: Sendable, Hashable {
    /// The user id (ObjectId hex), the `sub` of access tokens.
    package var id: String
    /// The app the user belongs to.
    package var appId: String
    /// The provider the user logs in with.
    package var provider: String
    /// The provider's identity: lower-cased email, API key id, or the custom JWT `sub`; `nil` for anonymous users.
    package var identity: String?
    /// The scrypt hash for email/password users.
    package var passwordHash: String?
    /// Creation time, seconds since 1970.
    package var createdAt: Int64
    /// Disabled users cannot log in or refresh.
    package var isDisabled: Bool
}

/// A stored refresh token (the token itself is never stored, only its SHA-256).
package struct RefreshTokenRecord: Sendable, Hashable {
    package var tokenHash: [UInt8]
    package var appId: String
    package var userId: String
    package var deviceId: String
    package var createdAt: Int64
    package var expiresAt: Int64
    /// When the token was revoked (logout or rotation), if it was.
    package var revokedAt: Int64?
}

/// A stored API key (the key itself is never stored, only its SHA-256).
package struct APIKeyRecord: Sendable, Hashable {
    /// The key id (ObjectId hex).
    package var id: String
    package var appId: String
    /// The administrator's name for the key, unique per app.
    package var name: String
    /// The user the key logs in as.
    package var userId: String
    package var createdAt: Int64
    package var revokedAt: Int64?
}

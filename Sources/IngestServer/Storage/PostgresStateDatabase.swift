import Foundation
import IngestSupport

/// The state store's statements on PostgreSQL, so that several ingest
/// servers share users, refresh tokens, API keys and app secrets (and,
/// through ``SharedSchemaStore``, development mode's learned schemas).
///
/// Translates the store's SQLite dialect: `?` → `$n`, `INSERT OR IGNORE` →
/// `INSERT … ON CONFLICT DO NOTHING`; maps `bytea` results to blobs and
/// integer columns to integers. One connection (the store serializes its
/// calls); a lost connection is reopened on the next call.
final class PostgresStateDatabase: StateDatabase {
    private let connectionString: String
    private var connection: PostgresConnection?
    private(set) var changes = 0
    /// The connection string without its password, for messages.
    let displayName: String

    /// Connects and creates the state tables if missing.
    init(connection: String) throws(StorageError) {
        connectionString = connection
        displayName = PostgresConnection.redacted(connection)
        let db = try handle()
        do throws(PostgresError) {
            // One creator at a time across servers: CREATE … IF NOT EXISTS alone races.
            try db.execute(
                """
                BEGIN;
                SELECT pg_advisory_xact_lock(7460212);
                CREATE TABLE IF NOT EXISTS users (
                    id text PRIMARY KEY, app_id text NOT NULL, provider text NOT NULL, identity text,
                    password_hash text, created_at bigint NOT NULL, disabled bigint NOT NULL DEFAULT 0);
                CREATE UNIQUE INDEX IF NOT EXISTS users_identity ON users(app_id, provider, identity)
                    WHERE identity IS NOT NULL;
                CREATE TABLE IF NOT EXISTS refresh_tokens (
                    token_hash bytea PRIMARY KEY, app_id text NOT NULL, user_id text NOT NULL REFERENCES users(id),
                    device_id text NOT NULL, created_at bigint NOT NULL, expires_at bigint NOT NULL, revoked_at bigint);
                CREATE INDEX IF NOT EXISTS refresh_tokens_user ON refresh_tokens(user_id);
                CREATE TABLE IF NOT EXISTS api_keys (
                    id text PRIMARY KEY, app_id text NOT NULL, name text NOT NULL, key_hash bytea NOT NULL UNIQUE,
                    user_id text NOT NULL REFERENCES users(id), created_at bigint NOT NULL, revoked_at bigint,
                    UNIQUE(app_id, name));
                CREATE TABLE IF NOT EXISTS app_secrets (
                    app_id text PRIMARY KEY, secret bytea NOT NULL, created_at bigint NOT NULL);
                CREATE TABLE IF NOT EXISTS realm_client_files (
                    file_ident bigserial PRIMARY KEY, app_id text NOT NULL, salt bigint NOT NULL, user_id text NOT NULL,
                    created_at bigint NOT NULL);
                CREATE TABLE IF NOT EXISTS development_schemas (
                    app_id text PRIMARY KEY, schema text NOT NULL, version bigint NOT NULL, updated_at bigint NOT NULL);
                COMMIT;
                """)
        } catch {
            throw StorageError(.open, "cannot create the state tables in PostgreSQL: \(error.message)", path: displayName)
        }
    }

    func close() {
        connection?.close()
        connection = nil
    }

    private func handle() throws(StorageError) -> PostgresConnection {
        if let connection, connection.isHealthy { return connection }
        connection?.close()
        do throws(PostgresError) {
            let fresh = try PostgresConnection(connectionString)
            connection = fresh
            return fresh
        } catch {
            throw StorageError(.open, error.message, path: displayName)
        }
    }

    @discardableResult
    func query(_ sql: String, _ arguments: [SQLiteValue]) throws(StorageError) -> [[SQLiteValue]] {
        let db = try handle()
        let parameters: [PostgresConnection.Value] = arguments.map { value in
            switch value {
            case .null: .null
            case .integer(let number): .text(String(number))
            case .real(let number): .text(String(number))
            case .text(let text): .text(text)
            case .blob(let bytes): .bytes(bytes)
            }
        }
        do throws(PostgresError) {
            let answer = try db.queryWithTypes(Self.translated(sql), parameters)
            changes = answer.affected
            return answer.rows.map { row in
                row.enumerated().map { column, field in
                    guard let field else { return .null }
                    switch answer.types[column] {
                    case 17: return .blob(Self.decodeBytea(field))
                    case 16: return .integer(field.first == UInt8(ascii: "t") ? 1 : 0)
                    case 20, 21, 23: return .integer(Int64(String(decoding: field, as: UTF8.self)) ?? 0)
                    default: return .text(String(decoding: field, as: UTF8.self))
                    }
                }
            }
        } catch {
            let code: StorageError.Code = error.sqlState?.hasPrefix("23") == true ? .constraint : .statement
            throw StorageError(code, error.message, path: displayName)
        }
    }

    func transaction<T>(_ body: () throws -> T) throws -> T {
        try query("BEGIN")
        do {
            let result = try body()
            try query("COMMIT")
            return result
        } catch {
            _ = try? query("ROLLBACK")
            throw error
        }
    }

    /// `?` → `$1…`, `INSERT OR IGNORE INTO …` → `INSERT INTO … ON CONFLICT DO NOTHING`.
    static func translated(_ sql: String) -> String {
        var out = ""
        var number = 0
        var inString = false
        for character in sql {
            if character == "'" { inString.toggle() }
            if character == "?" && !inString {
                number += 1
                out += "$\(number)"
            } else {
                out.append(character)
            }
        }
        if out.contains("INSERT OR IGNORE INTO") {
            out = out.replacingOccurrences(of: "INSERT OR IGNORE INTO", with: "INSERT INTO") + " ON CONFLICT DO NOTHING"
        }
        return out
    }

    /// bytea's text output: `\x` followed by hex digits.
    static func decodeBytea(_ text: [UInt8]) -> [UInt8] {
        guard text.count >= 2, text[0] == 0x5C, text[1] == 0x78 else { return text }
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case 0x30...0x39: c - 0x30
            case 0x61...0x66: c - 0x61 + 10
            case 0x41...0x46: c - 0x41 + 10
            default: 0
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity((text.count - 2) / 2)
        var index = 2
        while index + 1 < text.count {
            bytes.append(nibble(text[index]) << 4 | nibble(text[index + 1]))
            index += 2
        }
        return bytes
    }
}

import Foundation
import IngestSupport

/// The local store's calls on the SQLite layer (IngestSupport/SQLite): the
/// same operations, with failures as ``LocalStoreError`` whose messages
/// name the realm file.
extension SQLiteConnection {
    /// Opens (and creates, if `create`) a local realm's file.
    static func localRealm(at fileURL: URL, create: Bool, busyTimeoutMilliseconds: Int32) throws(LocalStoreError) -> SQLiteConnection {
        do {
            return try SQLiteConnection(
                path: fileURL.path,
                options: .init(
                    access: create ? .readWriteCreate : .readWrite, busyTimeoutMilliseconds: busyTimeoutMilliseconds))
        } catch {
            throw LocalStoreError(error)
        }
    }

    /// The database file.
    var fileURL: URL { URL(fileURLWithPath: path) }

    /// ``execute(sql:)``.
    func execute(_ sql: String) throws(LocalStoreError) {
        do { try execute(sql: sql) } catch { throw LocalStoreError(error) }
    }

    /// ``rows(sql:arguments:)``.
    func rows(_ sql: String, _ values: [SQLiteValue] = []) throws(LocalStoreError) -> [[SQLiteValue]] {
        do { return try rows(sql: sql, arguments: values) } catch { throw LocalStoreError(error) }
    }

    /// ``run(sql:arguments:)``: the number of rows changed.
    @discardableResult
    func run(_ sql: String, _ values: [SQLiteValue] = []) throws(LocalStoreError) -> Int {
        do { return try run(sql: sql, arguments: values) } catch { throw LocalStoreError(error) }
    }
}

extension LocalStoreError {
    /// The local store's error for a failure of its SQLite connection.
    init(_ error: SQLiteError) {
        let fileURL = URL(fileURLWithPath: error.path)
        let code = error.extendedResultCode
        let what: String
        switch error.operation {
        case .open:
            self.init(
                .openFailed, fileURL: fileURL, sqliteCode: code,
                message: "cannot open the local realm file \(error.path): \(error.message); check that the directory exists and is writable"
            )
            return
        case .closed:
            self.init(.closed, fileURL: fileURL, message: "the local realm file \(error.path) is closed; open it again")
            return
        case .prepare: what = "preparing \(error.sql?.prefix(80) ?? "")"
        case .bind(let parameter): what = "binding parameter \(parameter)"
        case .step, .execute: what = String(error.sql?.prefix(80) ?? "")
        }
        self.init(
            .sqlite, fileURL: fileURL, sqliteCode: code,
            message: "\(what) failed in \(fileURL.lastPathComponent): \(error.message) (SQLite code \(code))")
    }
}

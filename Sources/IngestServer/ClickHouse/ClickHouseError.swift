import IngestCore
import IngestSupport

/// A ClickHouse failure: the server's exception (its numeric code and
/// text) or a connection problem, with whether retrying later may succeed.
///
/// ```swift
/// do { try client.execute("SELECT 1") }
/// catch { print(error.serverCode ?? -1, error.isTransient, error.message) }
/// ```
package struct ClickHouseError: Error, Sendable, CustomStringConvertible {
    /// The kind of failure. Extensible: new codes may be added.
    package struct Code: RawRepresentable, Hashable, Sendable {
        package var rawValue: String
        package init(rawValue: String) { self.rawValue = rawValue }
        /// The server could not be reached, or the connection broke.
        package static let connection = Code(rawValue: "connection")
        /// The server answered with an exception (``ClickHouseError/serverCode``).
        package static let server = Code(rawValue: "server")
        /// The answer was not valid HTTP, or the URL is unusable.
        package static let protocolError = Code(rawValue: "protocol")
        /// A value ClickHouse cannot hold, or another caller mistake.
        package static let usage = Code(rawValue: "usage")
    }

    /// The kind of failure.
    package var code: Code
    /// What happened and what to do.
    package var message: String
    /// ClickHouse's exception code (`Code: 252` → 252), if the server sent one.
    package var serverCode: Int?
    /// The HTTP status, if the server answered.
    package var httpStatus: Int?
    /// The `errno` of the failing system call, for a ``Code/connection`` failure.
    package var errno: Int32?

    /// Creates an error.
    package init(_ code: Code, _ message: String, serverCode: Int? = nil, httpStatus: Int? = nil, errno: Int32? = nil) {
        self.code = code
        self.message = message
        self.serverCode = serverCode
        self.httpStatus = httpStatus
        self.errno = errno
    }

    /// The socket client's failure talking to ClickHouse: an
    /// answer that is not valid HTTP is ``Code/protocolError``, everything
    /// else (resolving, connecting, sending, reading, timeouts) is
    /// ``Code/connection``, transient. The message names the server
    /// (`ClickHouse at http://host:port`) and keeps the `errno`.
    init(_ error: HTTPClientError) {
        switch error.code {
        case .invalidResponse:
            self.init(.protocolError, error.message, errno: error.errno)
        case .hostNotFound:
            self.init(.connection, "\(error.message); check the host of the ClickHouse URL", errno: error.errno)
        default:
            self.init(.connection, error.message, errno: error.errno)
        }
    }

    /// Whether retrying later may succeed: no connection, a timeout, too
    /// many parts or queries, memory limits, a server shutting down.
    package var isTransient: Bool {
        if code == .connection { return true }
        guard let serverCode else { return httpStatus == 503 }
        // 159 timeout, 164 readonly (replica going down), 202 too many
        // simultaneous queries, 209 socket timeout, 210 network error, 241
        // memory limit, 242 table is read only, 252 too many parts, 279 all
        // connection tries failed, 319 unknown status of insert, 394 query
        // was cancelled.
        return [159, 164, 202, 209, 210, 241, 242, 252, 279, 319, 394].contains(serverCode)
    }

    package var description: String {
        "ClickHouseError(\(code.rawValue)\(serverCode.map { ", code \($0)" } ?? "")): \(message)"
            + (errno.map { " (errno \($0))" } ?? "")
    }
}

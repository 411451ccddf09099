/// A failure to start the ingest service: the state database, a sink or an
/// app's schema could not be prepared.
///
/// ```swift
/// do { service = try IngestService(configuration: config) }
/// catch { print("ingest-server: \(error)") }   // says what to fix
/// ```
package struct IngestServiceError: Error, Sendable, CustomStringConvertible {
    /// What happened and what to do.
    package var message: String
    /// The app concerned, if any.
    package var appId: String?

    /// Creates an error.
    package init(_ message: String, appId: String? = nil) {
        self.message = message
        self.appId = appId
    }

    package var description: String { appId.map { "app \($0): \(message)" } ?? message }
}

import Foundation
import IngestCore

/// Email/password operations of an ``App`` (provider `local-userpass`).
///
/// ```swift
/// try await app.emailPasswordAuth.registerUser(email: "ada@example.com", password: "correct horse")
/// let user = try await app.login(credentials: .emailPassword(email: "ada@example.com", password: "correct horse"))
/// ```
public struct EmailPasswordAuth: Sendable {
    let app: App

    /// Registers a user; they can log in at once.
    /// - Throws: ``AppError`` `alreadyExists` (email taken), `badRequest`
    ///   (password too short for the app's policy), `network`, …
    public func registerUser(email: String, password: String) async throws {
        let response = try await app.request(
            "POST", ProtocolRoutes.registerPath(appId: app.id), body: RegisterRequest(email: email, password: password))
        guard response.status == 201 || response.status == 200 else {
            throw app.authError(response, action: "register \(email)")
        }
    }
}

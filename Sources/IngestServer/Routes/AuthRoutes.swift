import IngestCore
import IngestHTTP

extension HTTPRouter {
    /// Registers the authentication endpoints, shaped like the seed's backend
    /// (Docs/Protocol.md has the bodies and statuses): thin adapters from
    /// HTTP to ``AuthService`` and back.
    ///
    /// - `POST /api/client/v2.0/app/{appId}/auth/providers/{provider}/login` → 200 ``LoginAnswer``;
    /// - `POST /api/client/v2.0/app/{appId}/auth/providers/local-userpass/register`
    ///   with ``RegisterRequest`` → 201 ``RegisterAnswer``;
    /// - `POST /api/client/v2.0/auth/session` with `Authorization: Bearer <refresh_token>`
    ///   → 201 ``SessionAnswer``;
    /// - `DELETE /api/client/v2.0/auth/session` with `Authorization: Bearer <refresh_token>` → 204.
    ///
    /// Errors answer the ``ErrorBody`` with the status of ``AuthError/kind``.
    ///
    /// ```swift
    /// var router = HTTPRouter()
    /// router.addAuthRoutes(auth)
    /// ```
    package mutating func addAuthRoutes(_ auth: AuthService) {
        post(ProtocolRoutes.loginPattern) { request in
            Self.authResponse { () throws(AuthError) in
                let login = try auth.login(
                    appId: request.pathParameters["appId"] ?? "",
                    provider: request.pathParameters["provider"] ?? "", body: request.body)
                return .json(login.jsonBody)
            }
        }
        post(ProtocolRoutes.registerPattern) { request in
            Self.authResponse { () throws(AuthError) in
                let userId = try auth.register(appId: request.pathParameters["appId"] ?? "", body: request.body)
                return .json(RegisterAnswer(userId: userId).jsonBody, status: .created)
            }
        }
        post(ProtocolRoutes.sessionPath) { request in
            Self.authResponse { () throws(AuthError) in
                let session = try auth.refresh(refreshToken: try Self.bearerRefreshToken(request))
                return .json(session.jsonBody, status: .created)
            }
        }
        delete(ProtocolRoutes.sessionPath) { request in
            Self.authResponse { () throws(AuthError) in
                try auth.logout(refreshToken: try Self.bearerRefreshToken(request))
                return HTTPResponse(status: .noContent)
            }
        }
    }

    static func bearerRefreshToken(_ request: HTTPRequest) throws(AuthError) -> String {
        switch PresentedToken(authorization: request.headers["authorization"]) {
        case .missing:
            throw AuthError(.invalidToken, "send the refresh token as \"Authorization: Bearer <refresh_token>\"")
        case .malformed:
            throw AuthError(.invalidToken, "the Authorization header must be \"Bearer <refresh_token>\"")
        case .bearer(let token):
            return token
        }
    }

    static func authResponse(_ body: () throws(AuthError) -> HTTPResponse) -> HTTPResponse {
        do {
            return try body()
        } catch {
            return error.httpResponse
        }
    }
}

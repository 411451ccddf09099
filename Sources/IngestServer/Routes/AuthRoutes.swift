import IngestHTTP

extension HTTPRouter {
    /// Registers the authentication endpoints, shaped like the seed's backend
    /// (Docs/Protocol.md has the bodies and statuses):
    ///
    /// - `POST /api/client/v2.0/app/{appId}/auth/providers/{provider}/login` → 200
    ///   `{"access_token","refresh_token","user_id","device_id"}`;
    /// - `POST /api/client/v2.0/app/{appId}/auth/providers/local-userpass/register`
    ///   with `{"email","password"}` → 201 `{"user_id"}`;
    /// - `POST /api/client/v2.0/auth/session` with `Authorization: Bearer <refresh_token>`
    ///   → 201 `{"access_token"}` (plus `refresh_token` when the app rotates them);
    /// - `DELETE /api/client/v2.0/auth/session` with `Authorization: Bearer <refresh_token>` → 204.
    ///
    /// Errors answer `{"error","error_code"}` with ``AuthError/httpStatus``.
    ///
    /// ```swift
    /// var router = HTTPRouter()
    /// router.addAuthRoutes(auth)
    /// ```
    package mutating func addAuthRoutes(_ auth: AuthService) {
        post("/api/client/v2.0/app/{appId}/auth/providers/{provider}/login") { request in
            Self.authResponse {  () throws(AuthError) in
                let login = try auth.login(appId: request.pathParameters["appId"] ?? "",
                                           provider: request.pathParameters["provider"] ?? "", body: request.body)
                return .json(login.jsonBody)
            }
        }
        post("/api/client/v2.0/app/{appId}/auth/providers/local-userpass/register") { request in
            Self.authResponse { () throws(AuthError) in
                let userId = try auth.register(appId: request.pathParameters["appId"] ?? "", body: request.body)
                return .json(#"{"user_id":\#(jsonQuoted(userId))}"#, status: .created)
            }
        }
        post("/api/client/v2.0/auth/session") { request in
            Self.authResponse { () throws(AuthError) in
                let session = try auth.refresh(refreshToken: try Self.bearerRefreshToken(request))
                return .json(session.jsonBody, status: .created)
            }
        }
        delete("/api/client/v2.0/auth/session") { request in
            Self.authResponse { () throws(AuthError) in
                try auth.logout(refreshToken: try Self.bearerRefreshToken(request))
                return HTTPResponse(status: .noContent)
            }
        }
    }

    static func bearerRefreshToken(_ request: HTTPRequest) throws(AuthError) -> String {
        guard let header = request.headers["authorization"] else {
            throw AuthError(.invalidToken, "send the refresh token as \"Authorization: Bearer <refresh_token>\"")
        }
        let parts = header.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else {
            throw AuthError(.invalidToken, "the Authorization header must be \"Bearer <refresh_token>\"")
        }
        return String(parts[1].trimmingHTTPWhitespace())
    }

    static func authResponse(_ body: () throws(AuthError) -> HTTPResponse) -> HTTPResponse {
        do {
            return try body()
        } catch {
            var response = HTTPResponse.json(error.jsonBody, status: HTTPStatus(code: error.httpStatus))
            if let seconds = error.retryAfterSeconds { response.headers.add(name: "Retry-After", value: String(seconds)) }
            return response
        }
    }
}

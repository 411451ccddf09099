/// Which auth providers an app enables, with their settings. A provider
/// that is `nil` is disabled: logins with it answer 403.
///
/// ```json
/// "auth": {
///   "anon-user": {},
///   "local-userpass": { "minPasswordLength": 10 },
///   "api-key": {},
///   "custom-token": { "audience": ["weather"], "keys": [{ "algorithm": "RS256", "publicKeyFile": "issuer.pem" }] }
/// }
/// ```
package struct AuthConfiguration: Sendable {
    /// Anonymous login (`anon-user`). Default: disabled.
    package var anonymous: AnonymousSettings? = nil
    /// Email/password (`local-userpass`). Default: disabled.
    package var userPassword: UserPasswordSettings? = nil
    /// Server API keys (`api-key`). Default: disabled.
    package var apiKey: APIKeySettings? = nil
    /// Third-party JWTs (`custom-token`). Default: disabled.
    package var customToken: CustomTokenSettings? = nil

    package init(
        anonymous: AnonymousSettings? = nil, userPassword: UserPasswordSettings? = nil,
        apiKey: APIKeySettings? = nil, customToken: CustomTokenSettings? = nil
    ) {
        self.anonymous = anonymous
        self.userPassword = userPassword
        self.apiKey = apiKey
        self.customToken = customToken
    }

    /// Whether `provider` is enabled.
    package func isEnabled(_ provider: AuthProvider) -> Bool {
        switch provider {
        case .anonymous: anonymous != nil
        case .userPassword: userPassword != nil
        case .apiKey: apiKey != nil
        case .customToken: customToken != nil
        }
    }

    /// The enabled providers.
    package var enabledProviders: [AuthProvider] { AuthProvider.allCases.filter(isEnabled) }
}

/// Settings of the anonymous provider (none yet; `{}` enables it).
package struct AnonymousSettings: Sendable {
    package init() {}
}

/// Settings of the email/password provider.
package struct UserPasswordSettings: Sendable {
    /// The shortest password accepted at registration. Default 8.
    package var minPasswordLength: Int = 8
    /// The scrypt cost for new password hashes. Default logN 15, r 8, p 1.
    package var passwordHashing: PasswordHasher.Parameters = .init()
    /// Failed logins per email before further attempts get 429. Default 10.
    package var maxFailedLogins: Int = 10
    /// How long failed logins are counted and the lock lasts, in seconds. Default 900.
    package var lockoutSeconds: Int64 = 900

    package init(
        minPasswordLength: Int = 8, passwordHashing: PasswordHasher.Parameters = .init(),
        maxFailedLogins: Int = 10, lockoutSeconds: Int64 = 900
    ) {
        self.minPasswordLength = minPasswordLength
        self.passwordHashing = passwordHashing
        self.maxFailedLogins = maxFailedLogins
        self.lockoutSeconds = lockoutSeconds
    }
}

/// Settings of the API key provider (none yet; `{}` enables it).
package struct APIKeySettings: Sendable {
    package init() {}
}

/// Settings of the custom JWT provider: which keys sign valid tokens and
/// which claims they must carry.
package struct CustomTokenSettings: Sendable {
    /// One verification key.
    package struct Key: Sendable {
        /// The algorithm and its key material.
        package enum Material: Sendable {
            /// HMAC-SHA256 with a shared secret.
            case hs256(secret: [UInt8])
            /// RSA PKCS#1 v1.5 with SHA-256, verified with a public key.
            case rs256(RSAPublicKey)
        }

        /// The key material; its algorithm is the only `alg` it accepts.
        package var material: Material
        /// If set, only tokens whose `kid` header equals it are checked with this key.
        package var keyId: String?

        package init(material: Material, keyId: String? = nil) {
            self.material = material
            self.keyId = keyId
        }

        /// `HS256` or `RS256`.
        package var algorithm: String {
            switch material {
            case .hs256: "HS256"
            case .rs256: "RS256"
            }
        }
    }

    /// The accepted keys (at least one).
    package var keys: [Key]
    /// Accepted `aud` values; if non-empty the token's `aud` (string or array) must contain one. Default: none.
    package var audience: [String] = []
    /// The required `iss`, if set. Default: not checked.
    package var issuer: String? = nil
    /// Clock skew tolerated on `exp`, `nbf` and `iat`, in seconds. Default 30.
    package var leewaySeconds: Int64 = 30
    /// The longest accepted `exp - iat` (or `exp - now`), in seconds. Default 86400 (one day).
    package var maxLifetimeSeconds: Int64 = 86_400

    package init(
        keys: [Key], audience: [String] = [], issuer: String? = nil, leewaySeconds: Int64 = 30,
        maxLifetimeSeconds: Int64 = 86_400
    ) {
        self.keys = keys
        self.audience = audience
        self.issuer = issuer
        self.leewaySeconds = leewaySeconds
        self.maxLifetimeSeconds = maxLifetimeSeconds
    }
}

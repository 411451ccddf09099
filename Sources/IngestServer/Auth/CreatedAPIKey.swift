/// A newly created API key: the only time the key itself is available.
///
/// ```swift
/// let created = try auth.createAPIKey(appId: "shop", name: "till-1")
/// print(created.key)   // dik_…, shown once; the server keeps its SHA-256
/// ```
package struct CreatedAPIKey: Sendable, Hashable {
    /// The secret key to give to the client (`{"key": "…"}` at the `api-key` login). Not stored.
    package var key: String
    /// The stored record (id, name, user).
    package var record: APIKeyRecord
}

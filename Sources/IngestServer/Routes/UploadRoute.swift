import IngestCore
import IngestHTTP

extension UploadService {
    /// The HTTP adapter of `POST /api/client/v2.0/app/{appId}/ingest`: the
    /// path's app id, the `Authorization` header's bearer token and the body
    /// go to ``upload(appId:token:body:)``; a result answers 200 with its
    /// JSON (and `DataIngest-Replayed: true` for a replay), an error its
    /// status and ``ErrorBody``. Counts `ingest_uploads_total` by status.
    ///
    /// ```swift
    /// router.post(ProtocolRoutes.uploadPattern, uploads.handle)
    /// ```
    @Sendable
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        let appId = request.pathParameters["appId"] ?? ""
        var response: HTTPResponse
        do {
            let result = try upload(
                appId: appId, token: PresentedToken(authorization: request.headers["authorization"]),
                body: request.body)
            response = .json(result.body)
            if result.isReplay { response.headers.add(name: "DataIngest-Replayed", value: "true") }
        } catch {
            response = error.httpResponse
        }
        if apps[appId] != nil { metrics.uploads.increment([appId, String(response.status.code)]) }
        return response
    }
}

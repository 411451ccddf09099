import IngestCore
import IngestHTTP

extension ServiceErrorKind {
    /// The HTTP status the adapters answer this kind of failure with.
    package var httpStatus: HTTPStatus { HTTPStatus(code: statusCode) }

    /// The error answer: the kind's status, the ``ErrorBody`` and, when a
    /// retry delay is known, `Retry-After`.
    package func httpResponse(code: String, message: String, retryAfterSeconds: Int?) -> HTTPResponse {
        var response = HTTPResponse.json(ErrorBody(message: message, code: code).jsonBody, status: httpStatus)
        if let retryAfterSeconds { response.headers.add(name: "Retry-After", value: String(retryAfterSeconds)) }
        return response
    }
}

extension AuthError {
    /// The HTTP status for this error: 400, 401, 403, 404, 409, 429 or 500.
    package var httpStatus: Int { kind.httpStatus.code }

    /// The error body: `{"error":"<message>","error_code":"<code>"}`.
    package var jsonBody: [UInt8] { ErrorBody(message: message, code: code.rawValue).jsonBody }

    /// The error answer, with `Retry-After` for `.tooManyRequests`.
    package var httpResponse: HTTPResponse {
        kind.httpResponse(code: code.rawValue, message: message, retryAfterSeconds: retryAfterSeconds)
    }
}

extension UploadError {
    /// The HTTP status for this error (Docs/Protocol.md, "Upload errors").
    package var httpStatus: Int { kind.httpStatus.code }

    /// The error answer, with `Retry-After` for 429 and 503.
    package var httpResponse: HTTPResponse {
        kind.httpResponse(code: code, message: message, retryAfterSeconds: retryAfterSeconds)
    }
}

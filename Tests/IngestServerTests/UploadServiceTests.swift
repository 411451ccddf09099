import Foundation
import IngestCore
@testable import IngestHTTP
@testable import IngestServer
import IngestSupport
import IngestTestSupport
import Testing

/// The HTTP-free services as a second front door would call them: plain
/// values in (app id, presented token, bytes; a decoded login request),
/// results and errors with codes and kinds out. The HTTP adapters are
/// checked to give the documented statuses for those kinds.
@Suite("Services without HTTP")
struct UploadServiceTests {
    func makeService(_ directory: TemporaryDirectory) throws -> IngestService {
        let config = try ServerConfiguration(json: Array(uploadTestConfig.replacingOccurrences(of: "$DATA", with: directory.path).utf8))
        return try IngestService(configuration: config)
    }

    @Test("an upload is stored, then replayed byte for byte; the answer lists the rejected objects")
    func storedThenReplayed() throws {
        let directory = try TemporaryDirectory("e2e")
        let service = try makeService(directory)
        defer { service.close() }
        let login = try service.auth.login(appId: "shop", provider: "anon-user", request: LoginRequest())
        var wrong = sensor()
        wrong["temperature"] = .string("warm")
        let body = try makeSegment(store: SegmentStoreID.random(), number: 1, [[("WeatherSensor", sensor())], [("WeatherSensor", wrong)]])

        let first = try service.uploads.upload(appId: "shop", token: .bearer(login.accessToken), body: body)
        guard case .stored(let answer, let bytes) = first else {
            Issue.record("the first upload was not stored: \(first)")
            return
        }
        #expect(!first.isReplay)
        #expect(bytes == answer.jsonBody)
        #expect((answer.objects, answer.accepted, answer.duplicate, answer.rejected) == (2, 1, 0, 1))
        #expect(answer.rejectedObjects.map(\.errorCode) == ["wrongType"])
        #expect(answer.rejectedObjects.first?.id?.contains("$oid") == true)

        let again = try service.uploads.upload(appId: "shop", token: .bearer(login.accessToken), body: body)
        #expect(again.isReplay)
        #expect(again.body == bytes)
        #expect(try again.answer() == answer)
        #expect(service.metrics.replays.value(["shop"]) == 1)
    }

    @Test("failures carry a stable code and a kind; the app is checked before the token")
    func failuresHaveCodesAndKinds() throws {
        let directory = try TemporaryDirectory("e2e")
        let service = try makeService(directory)
        defer { service.close() }
        let token = try service.auth.login(appId: "shop", provider: "anon-user", body: []).accessToken
        let segment = try makeSegment(store: SegmentStoreID.random(), number: 1, [[("WeatherSensor", sensor())]])
        func failure(_ appId: String, _ presented: PresentedToken, _ body: [UInt8]) -> UploadError? {
            #expect(throws: UploadError.self) { try service.uploads.upload(appId: appId, token: presented, body: body) }
        }
        let cases: [(UploadError?, ServiceErrorKind, String, Int)] = [
            (failure("nope", .missing, segment), .notFound, "unknown_app", 404),
            (failure("shop", .missing, segment), .unauthenticated, "missing_token", 401),
            (failure("shop", .malformed, segment), .unauthenticated, "missing_token", 401),
            (failure("shop", .bearer("x.y.z"), segment), .unauthenticated, "invalid_token", 401),
            (failure("shop", .bearer(token), []), .invalidRequest, "empty_body", 400),
            (failure("shop", .bearer(token), Array("not gzip".utf8)), .invalidRequest, "malformed_gzip", 400),
        ]
        for (error, kind, code, status) in cases {
            #expect(error?.kind == kind && error?.code == code, "\(String(describing: error))")
            #expect(error?.httpStatus == status)
        }
        // The HTTP adapter answers what the service decided, in the protocol's error body.
        var request = HTTPRequest(method: "POST", target: ProtocolRoutes.uploadPath(appId: "shop"), body: segment)
        request.pathParameters = ["appId": "shop"]
        let response = service.uploads.handle(request)
        #expect(response.status.code == 401)
        #expect(try ErrorBody(jsonBody: response.body).code == "missing_token")
        #expect(service.metrics.uploads.value(["shop", "401"]) == 1)
    }

    @Test("every kind maps to its documented status; HTTP errors and service errors share the error body")
    func adaptersMapKindsAndShareTheErrorBody() {
        let statuses: [(ServiceErrorKind, Int)] = [
            (.invalidRequest, 400), (.unauthenticated, 401), (.forbidden, 403), (.notFound, 404), (.conflict, 409),
            (.tooLarge, 413), (.overloaded, 429), (.failed, 500), (.unavailable, 503),
        ]
        for (kind, status) in statuses { #expect(kind.httpStatus.code == status) }
        let overloaded = UploadError(.overloaded, code: "too_many_uploads", "busy", retryAfterSeconds: 2).httpResponse
        #expect(overloaded.status.code == 429 && overloaded.headers["retry-after"] == "2")
        let message = "a \"quoted\" \\ message\n\u{1}"
        let http = HTTPError(.conflict, code: .init("already_exists"), message).httpResponse()
        #expect(http.body == ErrorBody(message: message, code: "already_exists").jsonBody)
        #expect(AuthError(.alreadyExists, message).httpResponse.body == http.body)
        #expect(AuthError(.alreadyExists, message).httpStatus == 409)
    }
}

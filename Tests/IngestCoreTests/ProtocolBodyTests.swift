import Foundation
@testable import IngestCore
import Testing

/// The wire protocol's bodies (Docs/Protocol.md): every body survives an
/// encode and decode, and the bytes are the ones the server sent before the
/// bodies had a shared home (the literals below were produced by the
/// server's earlier writers: `UploadReport.json`, `LoginResponse.jsonBody`,
/// `AuthError.jsonBody`), so the protocol did not change.
@Suite("Protocol: bodies")
struct ProtocolBodyTests {
    /// Every escape the writer knows, a character it leaves alone (DEL), and non-ASCII.
    static let odd = "q\" b\\ s/ \n\r\t \u{1}\u{8}\u{c}\u{1f}\u{7f} é 🎉"

    static let uploadAnswer = UploadAnswer(
        storeId: "3B8C7A4E-2F41-4C55-9A61-0C1D2E3F4A5B", segmentNumber: 18446744073709551615,
        transactions: 3, objects: 5, accepted: 1, duplicate: 1,
        rejectedObjects: [
            .init(
                index: 3, transaction: 41, collection: "WeatherSensor", id: #"{"$oid":"65a1f0c2e4b0a1b2c3d4e5f6"}"#,
                errorCode: "wrongType", reason: odd),
            .init(
                index: 2, transaction: 41, collection: "Weather\"Sensor", id: nil, errorCode: "transactionRejected",
                reason: "object 3 of the same write transaction was rejected"),
            .init(index: 4, transaction: 42, collection: "K", id: #""a/b\"c""#, errorCode: "invalidBSON", reason: ""),
        ])

    @Test("the upload answer's bytes are unchanged")
    func uploadAnswerBytes() throws {
        let expected =
            #"{"store_id":"3B8C7A4E-2F41-4C55-9A61-0C1D2E3F4A5B","segment_number":18446744073709551615,"transactions":3,"objects":5,"accepted":1,"duplicate":1,"rejected":3,"rejected_objects":[{"index":3,"transaction":41,"collection":"WeatherSensor","_id":{"$oid":"65a1f0c2e4b0a1b2c3d4e5f6"},"error_code":"wrongType","reason":"q\" b\\ s/ \n\r\t \u0001\u0008\u000c\u001f"#
            + "\u{7f}"
            + #" é 🎉"},{"index":2,"transaction":41,"collection":"Weather\"Sensor","_id":null,"error_code":"transactionRejected","reason":"object 3 of the same write transaction was rejected"},{"index":4,"transaction":42,"collection":"K","_id":"a/b\"c","error_code":"invalidBSON","reason":""}]}"#
        #expect(String(decoding: Self.uploadAnswer.jsonBody, as: UTF8.self) == expected)
        let empty = UploadAnswer(
            storeId: "3B8C7A4E-2F41-4C55-9A61-0C1D2E3F4A5B", segmentNumber: 18446744073709551615,
            transactions: 1, objects: 1, accepted: 1, duplicate: 0, rejectedObjects: [])
        #expect(
            String(decoding: empty.jsonBody, as: UTF8.self)
                == #"{"store_id":"3B8C7A4E-2F41-4C55-9A61-0C1D2E3F4A5B","segment_number":18446744073709551615,"transactions":1,"objects":1,"accepted":1,"duplicate":0,"rejected":0,"rejected_objects":[]}"#
        )
    }

    @Test("the auth answers' and the error body's bytes are unchanged")
    func authAndErrorBytes() {
        let login = LoginAnswer(
            accessToken: "a.b.c", refreshToken: Self.odd, userId: "65a1f0c2e4b0a1b2c3d4e5f6",
            deviceId: "65a1f0c2e4b0a1b2c3d4e5f7")
        #expect(
            String(decoding: login.jsonBody, as: UTF8.self)
                == #"{"access_token":"a.b.c","refresh_token":"q\" b\\ s/ \n\r\t \u0001\u0008\u000c\u001f"# + "\u{7f}"
                + #" é 🎉","user_id":"65a1f0c2e4b0a1b2c3d4e5f6","device_id":"65a1f0c2e4b0a1b2c3d4e5f7"}"#)
        #expect(
            String(decoding: SessionAnswer(accessToken: "a.b.c", refreshToken: "r-1").jsonBody, as: UTF8.self)
                == #"{"access_token":"a.b.c","refresh_token":"r-1"}"#)
        #expect(String(decoding: SessionAnswer(accessToken: "a.b.c").jsonBody, as: UTF8.self) == #"{"access_token":"a.b.c"}"#)
        #expect(
            String(decoding: RegisterAnswer(userId: "65a1f0c2e4b0a1b2c3d4e5f6").jsonBody, as: UTF8.self)
                == #"{"user_id":"65a1f0c2e4b0a1b2c3d4e5f6"}"#)
        #expect(
            String(decoding: ErrorBody(message: Self.odd, code: "expired_token").jsonBody, as: UTF8.self)
                == #"{"error":"q\" b\\ s/ \n\r\t \u0001\u0008\u000c\u001f"# + "\u{7f}" + #" é 🎉","error_code":"expired_token"}"#)
    }

    @Test("the client's request bodies: compact, members in the documented order")
    func requestBytes() {
        func text(_ body: some ProtocolBody) -> String { String(decoding: body.jsonBody, as: UTF8.self) }
        #expect(text(LoginRequest()) == "{}")
        #expect(
            text(LoginRequest(deviceId: "65a1f0c2e4b0a1b2c3d4e5f7"))
                == #"{"options":{"device":{"deviceId":"65a1f0c2e4b0a1b2c3d4e5f7"}}}"#)
        #expect(text(LoginRequest(username: "ada@example.com", password: "p\"w")) == #"{"username":"ada@example.com","password":"p\"w"}"#)
        #expect(text(LoginRequest(key: "dik_x")) == #"{"key":"dik_x"}"#)
        #expect(text(LoginRequest(token: "h.c.s", deviceId: "d")) == #"{"token":"h.c.s","options":{"device":{"deviceId":"d"}}}"#)
        #expect(
            text(RegisterRequest(email: "ada@example.com", password: "correct horse"))
                == #"{"email":"ada@example.com","password":"correct horse"}"#)
    }

    @Test("every body survives an encode and a decode")
    func roundTrips() throws {
        func roundTrip<Body: ProtocolBody & Equatable>(_ body: Body) throws {
            let decoded = try Body(jsonBody: body.jsonBody)
            #expect(decoded == body)
            #expect(decoded.jsonBody == body.jsonBody)
        }
        try roundTrip(Self.uploadAnswer)
        try roundTrip(
            UploadAnswer(storeId: "x", segmentNumber: 0, transactions: 0, objects: 0, accepted: 0, duplicate: 0, rejectedObjects: []))
        try roundTrip(LoginAnswer(accessToken: Self.odd, refreshToken: "r", userId: "u", deviceId: "d"))
        try roundTrip(SessionAnswer(accessToken: "a"))
        try roundTrip(SessionAnswer(accessToken: "a", refreshToken: Self.odd))
        try roundTrip(RegisterAnswer(userId: Self.odd))
        try roundTrip(ErrorBody(message: Self.odd, code: "sink_unavailable"))
        try roundTrip(RegisterRequest(email: Self.odd, password: "p"))
        for request in [
            LoginRequest(), LoginRequest(username: "a", password: Self.odd, deviceId: "d"),
            LoginRequest(key: "k"), LoginRequest(token: "t", deviceId: Self.odd),
        ] {
            try roundTrip(request)
        }
        // The `_id` of every BSON type a primary key can have, as the server writes it.
        for id: BSON in [
            .objectId(ObjectId.generate()), .string("a/b\"\u{1}é"), .int32(-7), .int64(1 << 40),
            .binary(BSONBinary(subtype: 4, bytes: Array(repeating: 0xAB, count: 16))),
        ] {
            var answer = Self.uploadAnswer
            answer.rejectedObjects[0].id = id.extendedJSON(.relaxed)
            try roundTrip(answer)
        }
    }

    @Test("decoding reads what other writers send and names what is missing")
    func decodingIsTolerantWhereItMustBe() throws {
        // What the client's JSONSerialization used to send: any order, escaped slashes, whitespace.
        let login = try LoginRequest(
            jsonBody: Array(#" { "password" : "a\/b", "email": "ada@example.com", "options": {"device": {"deviceId": 5}} } "#.utf8))
        #expect(login == LoginRequest(username: "ada@example.com", password: "a/b"))
        #expect(try LoginRequest(jsonBody: Array(#"{"username": 1, "email": "e"}"#.utf8)).username == nil)
        // Unknown members are ignored; a missing one is named.
        let session = try SessionAnswer(jsonBody: Data(#"{"access_token":"a","refresh_token":null,"extra":[1,2]}"#.utf8))
        #expect(session == SessionAnswer(accessToken: "a"))
        let missing = #expect(throws: ProtocolBodyError.self) {
            try LoginAnswer(jsonBody: Array(#"{"access_token":"a","user_id":"u","device_id":"d"}"#.utf8))
        }
        #expect(missing?.code == .missingMember && missing?.member == "refresh_token")
        var body = String(decoding: Self.uploadAnswer.jsonBody, as: UTF8.self)
        body = body.replacingOccurrences(of: #""reason":"""#, with: #""reason":7"#)
        let wrong = #expect(throws: ProtocolBodyError.self) { try UploadAnswer(jsonBody: Array(body.utf8)) }
        #expect(wrong?.code == .wrongType && wrong?.member == "rejected_objects[2].reason")
        #expect((#expect(throws: ProtocolBodyError.self) { try UploadAnswer(jsonBody: Array("[]".utf8)) })?.code == .notAnObject)
        #expect((#expect(throws: ProtocolBodyError.self) { try ErrorBody(jsonBody: Array("<html>".utf8)) })?.code == .invalidJSON)
        #expect((#expect(throws: ProtocolBodyError.self) { try ErrorBody(jsonBody: [0xFF, 0x7B]) })?.code == .invalidJSON)
        // An error body is read leniently: what is there counts.
        #expect(try ErrorBody(jsonBody: Array(#"{"error_code":"x"}"#.utf8)) == ErrorBody(message: "", code: "x"))
    }

    @Test("the routes' builders fill the patterns")
    func routes() {
        #expect(
            ProtocolRoutes.loginPath(appId: "dev-1", provider: "anon-user")
                == ProtocolRoutes.loginPattern.replacingOccurrences(of: "{appId}", with: "dev-1").replacingOccurrences(
                    of: "{provider}", with: "anon-user"))
        #expect(
            ProtocolRoutes.loginPath(appId: "dev-1", provider: "anon-user") == "/api/client/v2.0/app/dev-1/auth/providers/anon-user/login")
        #expect(
            ProtocolRoutes.registerPath(appId: "a_b") == ProtocolRoutes.registerPattern.replacingOccurrences(of: "{appId}", with: "a_b"))
        #expect(ProtocolRoutes.uploadPath(appId: "shop") == "/api/client/v2.0/app/shop/ingest")
        #expect(ProtocolRoutes.uploadPattern == "/api/client/v2.0/app/{appId}/ingest")
        #expect(ProtocolRoutes.sessionPath == "/api/client/v2.0/auth/session")
    }
}

import Foundation
import IngestCore
import Testing

@testable import RealmSync

/// Every recorded message and changeset of a real Realm client parses, and
/// encodes back to the same bytes.
@Suite("Recorded Realm traffic")
struct RecordedTrafficTests {
    @Test("every client message parses and re-encodes byte for byte", arguments: Recordings.scenarios)
    func clientMessagesRoundTrip(scenario: String) throws {
        let events = try Recordings.messages(scenario).filter { $0.direction == "c2s" }
        #expect(!events.isEmpty)
        var types: Set<String> = []
        for event in events {
            let bytes = event.messageBytes
            let message = try ClientMessage(parsing: bytes)
            types.insert(message.type)
            #expect(message.encoded() == bytes, "\(scenario): \(event.fields["head"] ?? "")")
        }
        // The batch recording ends before the client unbinds.
        #expect(
            types.isSuperset(
                of: scenario == "batch" ? ["bind", "ident", "mark", "upload"] : ["bind", "ident", "mark", "upload", "unbind"]))
    }

    @Test("every server message is what ServerMessage encodes, byte for byte", arguments: Recordings.scenarios)
    func serverMessagesMatchTheRecording(scenario: String) throws {
        let events = try Recordings.messages(scenario).filter { $0.direction == "s2c" }
        #expect(!events.isEmpty)
        for event in events {
            let bytes = event.messageBytes
            let message = try ServerMessage(parsing: bytes)
            #expect(message.encoded() == bytes, "\(scenario): \(event.fields["head"] ?? "")")
        }
    }

    @Test("the recorded server answers, built from their fields")
    func recordedAnswersFromFields() throws {
        let events = try Recordings.messages("basic").filter { $0.direction == "s2c" }.map(\.messageBytes)
        let expected: [ServerMessage] = [
            .ident(ServerIdentMessage(session: 1, fileIdent: 1, fileIdentSalt: 4243)),
            .mark(MarkMessage(session: 1, requestIdent: 1)),
            .download(
                DownloadMessage(
                    session: 1, downloadServerVersion: 6, downloadClientVersion: 12, latestServerVersion: 6,
                    latestServerVersionSalt: 777, uploadClientVersion: 12, uploadServerVersion: 0)),
            .unbound(session: 1),
        ]
        #expect(events == expected.map { $0.encoded() })
    }

    @Test("the client's messages carry what the README says")
    func recordedClientFields() throws {
        let events = try Recordings.messages("basic").filter { $0.direction == "c2s" }
        guard case .bind(let bind) = try ClientMessage(parsing: events[0].messageBytes) else {
            Issue.record("the first message is not a bind")
            return
        }
        #expect(bind.session == 1 && bind.needsFileIdent && !bind.isSubserver && bind.token.isEmpty)
        #expect(bind.data == #"{"schemaVersion":1,"sessionReason":0}"#)
        #expect(bind.json != nil)
        guard case .ident(let ident) = try ClientMessage(parsing: events[1].messageBytes) else {
            Issue.record("the second message is not an ident")
            return
        }
        #expect(ident == ClientIdentMessage(session: 1, fileIdent: 1, fileIdentSalt: 4243, query: SyncQuery(version: 0, body: "{}")))
        let uploads = try Recordings.uploads("basic")
        #expect(uploads.count == 2)
        #expect(uploads[0].isCompressed && uploads[0].uncompressedSize == 5608 && uploads[0].compressedSize == 1431)
        #expect(uploads[0].progressClientVersion == 12)
        let changesets = try uploads[0].changesets()
        #expect(changesets.map(\.clientVersion) == [5, 7, 8, 10, 11, 12])
        #expect(changesets.allSatisfy { $0.originFileIdent == 0 && $0.lastIntegratedServerVersion == 0 })
        #expect(try uploads[1].changesets().isEmpty)
        #expect(uploads[1].progressClientVersion == 13 && uploads[1].progressServerVersion == 6)
    }

    @Test("every recorded changeset decodes and re-encodes byte for byte", arguments: Recordings.scenarios)
    func changesetsRoundTrip(scenario: String) throws {
        var count = 0
        for upload in try Recordings.uploads(scenario) {
            for changeset in try upload.changesets() {
                let instructions = try ChangesetDecoder.decodeAll(changeset.data)
                #expect(ChangesetEncoder.encode(instructions) == changeset.data)
                count += 1
            }
        }
        #expect(count > 0)
    }

    @Test("the recorded upgrade: subprotocol 14 is chosen out of 14 ... 2")
    func recordedUpgrade() throws {
        for scenario in Recordings.scenarios {
            for file in Recordings.transcriptFiles(scenario) {
                let events = try Recordings.events(file)
                guard let upgrade = events.first(where: { $0.kind == "http-upgrade" }),
                    let response = events.first(where: { $0.kind == "http-upgrade-response" }),
                    let lines = upgrade.fields["headers"] as? [String]
                else {
                    Issue.record("\(file.lastPathComponent) has no upgrade")
                    continue
                }
                let headers = lines.map { line -> (name: String, value: String) in
                    let colon = line.firstIndex(of: ":")!
                    return (String(line[..<colon]), String(line[line.index(after: colon)...]).trimmingCharacters(in: .whitespaces))
                }
                let request = try WebSocketUpgradeRequest(method: "GET", headers: headers)
                #expect(request.subprotocols.count == 13)
                let chosen = SyncProtocolVersion.choose(offered: request.subprotocols)
                #expect(chosen?.name == response.fields["chosen_protocol"] as? String)
                #expect(chosen?.version == 14)
                let answer = String(decoding: WebSocketHandshake.response(for: request, subprotocol: chosen?.name), as: UTF8.self)
                #expect(answer.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"))
                #expect(answer.contains("Sec-WebSocket-Accept: \(WebSocketHandshake.acceptValue(forKey: request.key))\r\n"))
                #expect(answer.contains("Sec-WebSocket-Protocol: com.mongodb.realm-query-sync#14\r\n"))
            }
        }
    }

    @Test("the reconnect scenario re-sends the same changesets")
    func reconnectResendsTheSameChangesets() throws {
        let files = Recordings.transcriptFiles("reconnect")
        func uploads(_ file: URL) throws -> [UploadChangeset] {
            try Recordings.events(file).filter { $0.kind == "message" && $0.direction == "c2s" }.flatMap { event -> [UploadChangeset] in
                if case .upload(let upload) = try ClientMessage(parsing: event.messageBytes) { return try upload.changesets() }
                return []
            }
        }
        let first = try uploads(files[0])
        let second = try uploads(files[1])
        #expect(!first.isEmpty)
        #expect(first == second)
    }
}

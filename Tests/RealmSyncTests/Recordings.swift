import Foundation
import IngestCore
import Testing

@testable import RealmSync

/// The recorded traffic of a real Realm client (realm-core 14.14.0) in
/// ../shared/testdata/realm-sync: $REALM_SYNC_TESTDATA_DIR, else the shared
/// folder next to the repository.
enum Recordings {
    static let scenarios = ["basic", "batch", "reconnect"]

    static func directory() -> URL {
        if let path = ProcessInfo.processInfo.environment["REALM_SYNC_TESTDATA_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        var folder = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // RealmSyncTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // repository root
        let first = folder.appendingPathComponent("../shared/testdata/realm-sync", isDirectory: true).standardizedFileURL
        for _ in 0..<3 {
            folder = folder.deletingLastPathComponent()
            let candidate = folder.appendingPathComponent("shared/testdata/realm-sync", isDirectory: true)
            if FileManager.default.fileExists(atPath: candidate.path) { return candidate }
        }
        return first
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// One WebSocket event of a transcript.
    struct Event {
        var direction: String  // c2s or s2c
        var kind: String  // http-upgrade, http-upgrade-response, message
        var fields: [String: Any]

        /// The whole message: the head, a newline, then the body.
        var messageBytes: [UInt8] {
            let head = fields["head"] as? String ?? ""
            let body = Data(base64Encoded: fields["body_b64"] as? String ?? "") ?? Data()
            return Array(head.utf8) + [0x0A] + [UInt8](body)
        }
    }

    /// The transcript files of a scenario, in session order.
    static func transcriptFiles(_ scenario: String) -> [URL] {
        let folder = directory().appendingPathComponent(scenario)
        if scenario == "reconnect" {
            return ["transcript-1-noack.jsonl", "transcript-2-full.jsonl"].map { folder.appendingPathComponent($0) }
        }
        return [folder.appendingPathComponent("transcript.jsonl")]
    }

    static func lines(_ url: URL) throws -> [[String: Any]] {
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                throw Failure("\(url.lastPathComponent): a line that is not a JSON object")
            }
            return object
        }
    }

    static func events(_ url: URL) throws -> [Event] {
        try lines(url).map { line in
            Event(direction: line["dir"] as? String ?? "", kind: line["kind"] as? String ?? "", fields: line)
        }
    }

    /// Every message event of a scenario, in order (both sessions for reconnect).
    static func messages(_ scenario: String) throws -> [Event] {
        try transcriptFiles(scenario).flatMap { try events($0) }.filter { $0.kind == "message" }
    }

    /// Every upload the client sent in a scenario, parsed.
    static func uploads(_ scenario: String) throws -> [UploadMessage] {
        try messages(scenario).filter { $0.direction == "c2s" }.compactMap { event in
            if case .upload(let upload) = try ClientMessage(parsing: event.messageBytes) { return upload }
            return nil
        }
    }

    /// The documents of `expected.jsonl`, with `raw_hex` turned back into the
    /// binary field `raw` (the file writes it as hex).
    static func expectedDocuments(_ scenario: String) throws -> [BSONDocument] {
        let url = directory().appendingPathComponent(scenario).appendingPathComponent("expected.jsonl")
        let text = try String(contentsOf: url, encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            var document = try BSONDocument(extendedJSON: String(line))
            if case .string(let hex)? = document["raw_hex"] {
                document["raw_hex"] = nil
                document["raw"] = .binary(BSONBinary(subtype: BSONBinary.Subtype.generic, bytes: try bytes(hex: hex)))
            }
            return document
        }
    }

    static func bytes(hex: String) throws -> [UInt8] {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { throw Failure("odd-length hex") }
        return try stride(from: 0, to: digits.count, by: 2).map { index in
            guard let byte = UInt8(String(decoding: digits[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw Failure("bad hex \(hex)")
            }
            return byte
        }
    }

    /// A document with the keys of every embedded document sorted (arrays
    /// keep their order), so that documents compare field by field and type
    /// by type whatever their field order.
    static func sortedKeys(_ document: BSONDocument) -> BSONDocument {
        var out = BSONDocument()
        for (key, value) in document.sorted(by: { $0.key < $1.key }) { out.append(key, sortedKeys(value)) }
        return out
    }

    static func sortedKeys(_ value: BSON) -> BSON {
        switch value {
        case .document(let document): return .document(sortedKeys(document))
        case .array(let elements): return .array(elements.map(sortedKeys))
        default: return value
        }
    }
}

import Foundation
import Testing
@testable import IngestCore

/// Runs MongoDB's public BSON corpus (../shared/testdata/bson-corpus, or
/// $BSON_CORPUS_DIR) as its README and the bson-corpus specification
/// describe, for every case of every file.
@Suite struct BSONCorpusTests {
    /// Cases deliberately not run, each with its reason. Every entry must
    /// match a case in the corpus (a stale entry fails the test), and each
    /// skip is printed. Nothing else is skipped.
    static let skipped: [(file: String, description: String, reason: String)] = []

    struct CorpusFile: Decodable {
        var description: String
        var bson_type: String
        var test_key: String?
        var deprecated: Bool?
        var valid: [Valid]?
        var decodeErrors: [DecodeError]?
        var parseErrors: [ParseError]?
    }

    struct Valid: Decodable {
        var description: String
        var canonical_bson: String
        var canonical_extjson: String
        var relaxed_extjson: String?
        var degenerate_bson: String?
        var degenerate_extjson: String?
        var converted_bson: String?
        var converted_extjson: String?
        var lossy: Bool?
    }

    struct DecodeError: Decodable {
        var description: String
        var bson: String
    }

    struct ParseError: Decodable {
        var description: String
        var string: String
    }

    /// The corpus folder: $BSON_CORPUS_DIR, else the shared test data next
    /// to the repository (three levels up from this file is the repo root).
    static func corpusDirectory() -> URL {
        if let path = ProcessInfo.processInfo.environment["BSON_CORPUS_DIR"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // IngestCoreTests
            .deletingLastPathComponent()  // Tests
            .deletingLastPathComponent()  // repository root
            .appendingPathComponent("../shared/testdata/bson-corpus", isDirectory: true)
            .standardizedFileURL
    }

    static func bytes(hex: String) throws -> [UInt8] {
        let utf8 = Array(hex.utf8)
        guard utf8.count % 2 == 0 else { throw CorpusError("odd-length hex '\(hex)'") }
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count / 2)
        var index = 0
        while index < utf8.count {
            guard let byte = UInt8(String(decoding: utf8[index..<index + 2], as: UTF8.self), radix: 16) else {
                throw CorpusError("bad hex '\(hex)'")
            }
            out.append(byte)
            index += 2
        }
        return out
    }

    struct CorpusError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }

    /// Extended JSON texts are compared as parsed JSON (member order kept,
    /// whitespace and escaping normalised, numbers by their exact text), as
    /// the corpus README asks.
    static func sameJSON(_ actual: String, _ expected: String) throws -> Bool {
        try JSONValue(parsing: actual) == JSONValue(parsing: expected)
    }

    @Test func everyCaseOfEveryFile() throws {
        let directory = Self.corpusDirectory()
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
            .filter { $0.hasSuffix(".json") }
            .sorted()
        #expect(!names.isEmpty, "no corpus files in \(directory.path)")
        var usedSkips = Set<Int>()
        var totals = (valid: 0, decode: 0, parse: 0, skipped: 0)

        for name in names {
            let data = try Data(contentsOf: directory.appendingPathComponent(name))
            let file = try JSONDecoder().decode(CorpusFile.self, from: data)
            var counts = (valid: 0, decode: 0, parse: 0, skipped: 0)

            func skipReason(_ description: String) -> String? {
                guard let index = Self.skipped.firstIndex(where: { $0.file == name && $0.description == description }) else {
                    return nil
                }
                usedSkips.insert(index)
                return Self.skipped[index].reason
            }

            for item in file.valid ?? [] {
                if let reason = skipReason(item.description) {
                    print("bson-corpus \(name): SKIPPED valid '\(item.description)': \(reason)")
                    counts.skipped += 1
                    continue
                }
                do {
                    try runValid(item, file: name)
                } catch {
                    Issue.record("\(name): valid '\(item.description)' threw \(error)")
                }
                counts.valid += 1
            }
            for item in file.decodeErrors ?? [] {
                if let reason = skipReason(item.description) {
                    print("bson-corpus \(name): SKIPPED decodeError '\(item.description)': \(reason)")
                    counts.skipped += 1
                    continue
                }
                let bytes = try Self.bytes(hex: item.bson)
                #expect(throws: BSONError.self, "\(name): decodeError '\(item.description)' was accepted") {
                    try BSONDocument(bson: bytes)
                }
                counts.decode += 1
            }
            for item in file.parseErrors ?? [] {
                if let reason = skipReason(item.description) {
                    print("bson-corpus \(name): SKIPPED parseError '\(item.description)': \(reason)")
                    counts.skipped += 1
                    continue
                }
                runParseError(item, file: name, bsonType: file.bson_type)
                counts.parse += 1
            }

            let total = counts.valid + counts.decode + counts.parse + counts.skipped
            #expect(total > 0, "\(name) has no test cases")
            var line = "bson-corpus \(name): \(counts.valid) valid, \(counts.decode) decodeErrors, \(counts.parse) parseErrors"
            if counts.skipped > 0 { line += ", \(counts.skipped) skipped" }
            print(line)
            totals.valid += counts.valid
            totals.decode += counts.decode
            totals.parse += counts.parse
            totals.skipped += counts.skipped
        }
        print(
            "bson-corpus total (\(names.count) files): \(totals.valid) valid, \(totals.decode) decodeErrors, \(totals.parse) parseErrors, \(totals.skipped) skipped"
        )
        for (index, skip) in Self.skipped.enumerated() where !usedSkips.contains(index) {
            Issue.record("skip entry matches no corpus case: \(skip.file) '\(skip.description)'")
        }
    }

    /// The assertions of the bson-corpus specification for a codec with a
    /// native representation, plus the direct BSON → JSON ones for
    /// degenerate BSON and the converted_* pair of deprecated types.
    func runValid(_ item: Valid, file: String) throws {
        let label = "\(file): '\(item.description)'"
        let lossy = item.lossy ?? false
        let canonicalBSON = try Self.bytes(hex: item.canonical_bson)
        let cEJ = item.canonical_extjson

        // cB → native → cB, cEJ, rEJ
        let native = try BSONDocument(bson: canonicalBSON)
        #expect(native.bsonBytes() == canonicalBSON, "\(label): cB does not round-trip")
        let canonical = native.extendedJSON(.canonical)
        #expect(try Self.sameJSON(canonical, cEJ), "\(label): cB → cEJ gave \(canonical)")
        if let rEJ = item.relaxed_extjson {
            let relaxed = native.extendedJSON(.relaxed)
            #expect(try Self.sameJSON(relaxed, rEJ), "\(label): cB → rEJ gave \(relaxed)")
        }

        // cEJ → native → cEJ, cB
        let fromCanonical = try BSONDocument(extendedJSON: cEJ)
        let again = fromCanonical.extendedJSON(.canonical)
        #expect(try Self.sameJSON(again, cEJ), "\(label): cEJ → cEJ gave \(again)")
        if !lossy {
            #expect(fromCanonical.bsonBytes() == canonicalBSON, "\(label): cEJ → cB differs")
        }

        // dB → native → cB (and its Extended JSON)
        if let hex = item.degenerate_bson {
            let degenerate = try BSONDocument(bson: try Self.bytes(hex: hex))
            #expect(degenerate.bsonBytes() == canonicalBSON, "\(label): dB → cB differs")
            let text = degenerate.extendedJSON(.canonical)
            #expect(try Self.sameJSON(text, cEJ), "\(label): dB → cEJ gave \(text)")
            if let rEJ = item.relaxed_extjson {
                let relaxed = degenerate.extendedJSON(.relaxed)
                #expect(try Self.sameJSON(relaxed, rEJ), "\(label): dB → rEJ gave \(relaxed)")
            }
        }

        // dEJ → native → cEJ, cB
        if let dEJ = item.degenerate_extjson {
            let degenerate = try BSONDocument(extendedJSON: dEJ)
            let text = degenerate.extendedJSON(.canonical)
            #expect(try Self.sameJSON(text, cEJ), "\(label): dEJ → cEJ gave \(text)")
            if !lossy {
                #expect(degenerate.bsonBytes() == canonicalBSON, "\(label): dEJ → cB differs")
            }
        }

        // rEJ → native → rEJ
        if let rEJ = item.relaxed_extjson {
            let relaxed = try BSONDocument(extendedJSON: rEJ).extendedJSON(.relaxed)
            #expect(try Self.sameJSON(relaxed, rEJ), "\(label): rEJ → rEJ gave \(relaxed)")
        }

        // Deprecated types: the converted pair must agree with each other.
        if let convertedHex = item.converted_bson, let convertedJSON = item.converted_extjson {
            let convertedBSON = try Self.bytes(hex: convertedHex)
            let fromBSON = try BSONDocument(bson: convertedBSON)
            #expect(fromBSON.bsonBytes() == convertedBSON, "\(label): converted_bson does not round-trip")
            let text = fromBSON.extendedJSON(.canonical)
            #expect(try Self.sameJSON(text, convertedJSON), "\(label): converted_bson → converted_extjson gave \(text)")
            let fromJSON = try BSONDocument(extendedJSON: convertedJSON)
            #expect(fromJSON.bsonBytes() == convertedBSON, "\(label): converted_extjson → converted_bson differs")
        } else {
            #expect(
                item.converted_bson == nil && item.converted_extjson == nil,
                "\(label): converted_bson and converted_extjson come in pairs")
        }
    }

    func runParseError(_ item: ParseError, file: String, bsonType: String) {
        let label = "\(file): parseError '\(item.description)'"
        if bsonType == "0x13" {
            // Decimal128: the string is input for the Decimal128 parser.
            #expect(throws: Decimal128Error.self, "\(label) was accepted") {
                try Decimal128(parsing: item.string)
            }
            // And inside Extended JSON it must be rejected too.
            let wrapped = #"{"d": {"$numberDecimal": "# + JSONValue.string(item.string).jsonText + "}}"
            #expect(throws: ExtendedJSONError.self, "\(label) was accepted as $numberDecimal") {
                try BSONDocument(extendedJSON: wrapped)
            }
        } else {
            // Top-level documents and binary: Extended JSON input that a
            // plain JSON parser accepts but an Extended JSON parser rejects.
            #expect(throws: ExtendedJSONError.self, "\(label) was accepted") {
                try BSONDocument(extendedJSON: item.string)
            }
            #expect(throws: Never.self, "\(label) is not even plain JSON") {
                _ = try JSONValue(parsing: item.string)
            }
        }
    }
}

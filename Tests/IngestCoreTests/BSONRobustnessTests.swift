import Foundation
import Testing
@testable import IngestCore
import IngestTestSupport

extension SplitMix64 {
    /// The seed to use: `INGEST_FUZZ_SEED` from the environment (to replay a
    /// failure), else `fallback`.
    static func seed(fallback: UInt64) -> UInt64 {
        if let text = ProcessInfo.processInfo.environment["INGEST_FUZZ_SEED"], let seed = UInt64(text) {
            return seed
        }
        return fallback
    }
}

/// Feeds random and mutated byte strings to the BSON decoder. Every input
/// must either decode or throw a `BSONError` (a crash or an out-of-bounds
/// read fails the run: debug builds check every raw load), and whatever
/// decodes must re-encode to bytes that decode and re-encode identically.
///
/// Longer local runs: `INGEST_FUZZ_COUNT=1000000 INGEST_FUZZ_SECONDS=600`
/// (and `INGEST_FUZZ_SEED=n` to replay a printed seed).
@Suite struct BSONRobustnessTests {
    /// Valid documents covering every type, the starting points for mutation.
    static func seedDocuments() -> [[UInt8]] {
        let everyType: BSONDocument = [
            "_id": .objectId(ObjectId(high: 0x56E1_FC72_E0C9_17E9, low: 0xC471_4161)),
            "d": .double(-0.0), "s": "héllo\0☆", "doc": .document(["n": .null, "i": .int32(7)]),
            "arr": .array([.int64(1), "x", .document([:]), .array([.bool(true)])]),
            "bin": .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(0..<16))),
            "old": .binary(BSONBinary(subtype: BSONBinary.Subtype.binaryOld, bytes: [1, 2, 3])),
            "u": .undefined, "t": true, "dt": .datetime(-1), "re": .regex(pattern: "^a.*", options: "imx"),
            "ptr": .dbPointer(ref: "db.c", id: ObjectId(high: 1, low: 2)), "js": .javascript("f()"),
            "sym": .symbol("s"), "jws": .javascriptWithScope(code: "x", scope: ["x": .int32(1), "y": "z"]),
            "i32": .int32(-5), "ts": .timestamp(BSONTimestamp(seconds: 1, increment: 2)), "i64": .int64(.min),
            "dec": .decimal128(Decimal128(high: 0x3040_0000_0000_0000, low: 1)), "min": .minKey, "max": .maxKey,
        ]
        let reading: BSONDocument = [
            "_id": .objectId(ObjectId(high: 1, low: 1)), "deviceId": "WX1278UIT",
            "temperatureInFahrenheit": 66.7, "barometricPressureInHg": 29.65, "windSpeedInMph": .int64(2),
        ]
        var deep: BSONDocument = ["leaf": .string("x")]
        for level in 0..<4 { deep = ["l\(level)": level % 2 == 0 ? .document(deep) : .array([.document(deep)])] }
        return [everyType.bsonBytes(), reading.bsonBytes(), deep.bsonBytes(), BSONDocument().bsonBytes()]
    }

    /// The corpus's valid documents (canonical and degenerate) as further
    /// seeds, when the shared test data is present.
    static func corpusDocuments() -> [[UInt8]] {
        let folder = BSONCorpusTests.corpusDirectory()  // $BSON_CORPUS_DIR, else ../shared/testdata
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [] }
        var documents: [[UInt8]] = []
        for file in files.sorted() where file.hasSuffix(".json") {
            guard let data = try? Data(contentsOf: folder.appendingPathComponent(file)),
                let json = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
            else { continue }
            for case let entry as [String: Any] in json["valid"] as? [Any] ?? [] {
                for key in ["canonical_bson", "degenerate_bson"] {
                    guard let hex = entry[key] as? String, hex.count % 2 == 0 else { continue }
                    let digits = Array(hex.utf8)
                    let bytes = stride(from: 0, to: digits.count, by: 2).compactMap {
                        UInt8(String(decoding: digits[$0..<($0 + 2)], as: UTF8.self), radix: 16)
                    }
                    if bytes.count * 2 == hex.count { documents.append(bytes) }
                }
            }
        }
        return documents
    }

    static let interestingInt32: [Int32] = [0, 1, 4, 5, -1, .min, .max, 0x7F, 0x80, 0xFF]
    static let interestingBytes: [UInt8] = [0x00, 0x01, 0x02, 0x7F, 0x80, 0xFF, 0xC0, 0xE9, 0xED, 0x13, 0x14]

    static func mutate(_ input: [UInt8], with random: inout SplitMix64, pool: [[UInt8]]) -> [UInt8] {
        var bytes = input
        let rounds = Int.random(in: 1...4, using: &random)
        for _ in 0..<rounds {
            let index = bytes.isEmpty ? 0 : Int.random(in: 0..<bytes.count, using: &random)
            switch Int.random(in: 0..<9, using: &random) {
            case 0 where !bytes.isEmpty:
                bytes[index] ^= UInt8(1) << UInt8.random(in: 0..<8, using: &random)
            case 1 where !bytes.isEmpty:
                bytes[index] = interestingBytes.randomElement(using: &random)!
            case 2 where bytes.count >= 4:
                // Overwrite an int32 (often a length) with an edge value or an off-by-one.
                let at = Int.random(in: 0...(bytes.count - 4), using: &random)
                let old = bytes[at..<(at + 4)].withUnsafeBytes { Int32(littleEndian: $0.loadUnaligned(as: Int32.self)) }
                let value =
                    Bool.random(using: &random)
                    ? interestingInt32.randomElement(using: &random)!
                    : old &+ Int32.random(in: -2...2, using: &random)
                withUnsafeBytes(of: value.littleEndian) { raw in
                    for offset in 0..<4 { bytes[at + offset] = raw[offset] }
                }
            case 3:
                bytes.removeLast(Int.random(in: 0...min(bytes.count, 8), using: &random))
            case 4:
                bytes.append(contentsOf: (0..<Int.random(in: 1...4, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) })
            case 5:
                bytes.insert(UInt8.random(in: 0...255, using: &random), at: index)
            case 6 where !bytes.isEmpty:
                bytes.remove(at: index)
            case 7:
                // Splice a piece of another document in.
                let other = pool.randomElement(using: &random)!
                let from = Int.random(in: 0..<other.count, using: &random)
                let to = Int.random(in: from...other.count, using: &random)
                let cut = min(index, bytes.count)
                bytes.replaceSubrange(cut..<min(cut + (to - from), bytes.count), with: other[from..<to])
            default:
                // Keep the outer length consistent so the mutation reaches inner parsing.
                if bytes.count >= 4 {
                    withUnsafeBytes(of: Int32(bytes.count).littleEndian) { raw in
                        for offset in 0..<4 { bytes[offset] = raw[offset] }
                    }
                }
            }
        }
        return bytes
    }

    static func randomBytes(with random: inout SplitMix64) -> [UInt8] {
        let count = Int.random(in: 0...48, using: &random)
        var bytes = (0..<count).map { _ in
            // Favour type bytes and small values so some inputs get deep.
            Bool.random(using: &random) ? UInt8.random(in: 0...0x13, using: &random) : UInt8.random(in: 0...255, using: &random)
        }
        if count >= 5, Bool.random(using: &random) {
            withUnsafeBytes(of: Int32(count).littleEndian) { raw in
                for offset in 0..<4 { bytes[offset] = raw[offset] }
            }
            bytes[count - 1] = 0
        }
        return bytes
    }

    /// Decodes `input` from an exactly sized allocation; checks the round trip.
    /// Returns whether it decoded.
    static func check(_ input: [UInt8], seed: UInt64, case number: Int) -> Bool {
        let pointer = UnsafeMutableRawBufferPointer.allocate(byteCount: input.count, alignment: 1)
        defer { pointer.deallocate() }
        pointer.copyBytes(from: input)
        let options = BSONDecodingOptions(maxDepth: 8)
        // The in-place element reader must accept exactly what the decoder
        // accepts, and see the same values.
        var elements: [BSONDocument.Field] = []
        var elementsError: BSONError?
        do {
            try BSONDocument.forEachElement(in: UnsafeRawBufferPointer(pointer), options: options) { element in
                elements.append(BSONDocument.Field(key: element.key, value: try element.value()))
            }
        } catch let error as BSONError {
            elementsError = error
        } catch {
            Issue.record("seed \(seed) case \(number): unexpected error \(error)")
        }
        let document: BSONDocument
        do {
            document = try BSONDocument(bson: UnsafeRawBufferPointer(pointer), options: options)
        } catch {
            if elementsError?.code != error.code {
                Issue.record("seed \(seed) case \(number): forEachElement disagrees: \(String(describing: elementsError)) vs \(error)")
            }
            return false
        }
        // Plain checks, not #expect: its message would be built for every case.
        if let elementsError {
            Issue.record("seed \(seed) case \(number): forEachElement rejected valid input: \(elementsError)")
        }
        let encoded = document.bsonBytes()
        if BSONDocument(fields: elements).bsonBytes() != encoded {
            Issue.record("seed \(seed) case \(number): forEachElement sees other values")
        }
        do {
            let again = try BSONDocument(bson: encoded)
            if again.bsonBytes() != encoded {
                Issue.record("seed \(seed) case \(number): re-encoding is not stable")
            }
        } catch {
            Issue.record("seed \(seed) case \(number): re-encoded bytes do not decode: \(error)")
        }
        return true
    }

    @Test func randomAndMutatedInputsNeverCrash() {
        let seed = SplitMix64.seed(fallback: 0x5EED_B50E)
        print("BSON robustness: seed \(seed) (replay with INGEST_FUZZ_SEED=\(seed))")
        var random = SplitMix64(seed: seed)
        let corpus = Self.corpusDocuments()
        print("BSON robustness: \(corpus.count) corpus documents added to the seeds")
        let pool = Self.seedDocuments() + corpus
        for document in pool { #expect(Self.check(document, seed: seed, case: -1)) }
        let total = Int(ProcessInfo.processInfo.environment["INGEST_FUZZ_COUNT"] ?? "") ?? 20_000
        var decoded = 0
        var processed = 0
        let deadline = Date().addingTimeInterval(Double(ProcessInfo.processInfo.environment["INGEST_FUZZ_SECONDS"] ?? "") ?? 60)
        for number in 0..<total {
            let input =
                number % 4 == 0
                ? Self.randomBytes(with: &random)
                : Self.mutate(pool.randomElement(using: &random)!, with: &random, pool: pool)
            if Self.check(input, seed: seed, case: number) { decoded += 1 }
            processed += 1
            if Date() > deadline {
                Issue.record("seed \(seed): stopped after \(number) cases at the time bound")
                break
            }
        }
        print("BSON robustness: \(processed) inputs, \(decoded) decoded, \(processed - decoded) rejected")
        // Mutations keep some inputs valid; nearly all random bytes fail.
        #expect(decoded > 0 && decoded < processed)
    }

    /// Inputs that once broke (or nearly broke) a decoder stay as regressions.
    @Test func regressions() {
        let cases: [[UInt8]] = [
            [],
            [0x05, 0x00, 0x00],
            [0xFF, 0xFF, 0xFF, 0x7F, 0x00],  // huge declared length
            [0x0C, 0x00, 0x00, 0x00, 0x0F, 0x00, 0xFF, 0xFF, 0xFF, 0x7F, 0x00, 0x00],  // code w/ scope total = Int32.max
            [0x0D, 0x00, 0x00, 0x00, 0x05, 0x00, 0xFC, 0xFF, 0xFF, 0x7F, 0x02, 0x00, 0x00],  // binary near Int32.max
            [0x0E, 0x00, 0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x00, 0x80, 0x00, 0x00, 0x00, 0x00],  // string length Int32.min
            // Old binary subtype with a 3-byte payload: no room for its inner
            // length (found by the fuzzer under ASan, seed 77: it crashed).
            [0x10, 0x00, 0x00, 0x00, 0x05, 0x78, 0x00, 0x03, 0x00, 0x00, 0x00, 0x02, 0xFF, 0xFF, 0xFF, 0x00],
        ]
        for (number, input) in cases.enumerated() {
            #expect(!Self.check(input, seed: 0, case: number))
        }
    }
}

import Foundation
import Testing
@testable import IngestCore
import IngestSupport

/// Inputs that Scripts/fuzz.sh found breaking IngestCore, kept as regression
/// cases (the same inputs are seeds in Fuzz/corpus/).
@Suite struct FuzzRegressionTests {
    /// The decrypt harness's key (Fuzz/decrypt/main.swift, Fuzz/make-seeds.py).
    static let key: SegmentEncryptionKey = {
        do { return try SegmentEncryptionKey(bytes: Array("decrypt-fuzz-key-0123456789abcde".utf8)) } catch { fatalError("\(error)") }
    }()

    static func header(_ kind: EncryptedFileHeader.Kind) -> EncryptedFileHeader {
        EncryptedFileHeader(
            kind: kind, storeId: SegmentStoreID(bytes: Array(0..<16))!, segmentNumber: 7,
            salt: [UInt8](repeating: 0x5A, count: 16), keyCheck: key.checkValue)
    }

    /// The seed the decrypt target failed on: mode byte 0x0F (plaintext
    /// encrypted by the harness as a sealed file in 33-byte blocks), then a
    /// segment stream of two transactions.
    static func seed(_ name: String) throws -> [UInt8] {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Fuzz/corpus/decrypt/\(name)").path
        return try #require(FileManager.default.contents(atPath: path).map { [UInt8]($0) }, "no seed at \(path)")
    }

    static func events(_ reader: SegmentReader) throws -> [SegmentEvent] {
        var events: [SegmentEvent] = []
        while let event = try reader.next() { events.append(event) }
        return events
    }

    /// Found by the decrypt target: EncryptedFileWriter counted the 72 header
    /// bytes twice when it advanced past its first block, so every later
    /// block was authenticated at the wrong file offset and no reader could
    /// open a sealed file of more than one block (the store's sealer writes
    /// 256 KiB blocks, its quarantine 64 KiB ones).
    @Test func sealedFilesOfSeveralBlocksDecrypt() throws {
        let input = try Self.seed("plain-sealed-two")
        #expect(input[0] == 0x0F)
        let gzip = try Gzip.compress(Array(input.dropFirst()), level: 1)
        let expected = try Self.events(SegmentReader(gzipBytes: gzip))
        #expect(expected.count == 6)

        var file: [UInt8] = []
        let writer = try EncryptedFileWriter(header: Self.header(.sealed), key: Self.key, blockBytes: 33) { file.append(contentsOf: $0) }
        try writer.write(gzip)
        try writer.finish()
        #expect(file.count == EncryptedFileHeader.byteCount + (gzip.count / 33 + 1) * SegmentCipher.blockOverhead + gzip.count)

        let source = try DecryptingByteSource(MemoryByteSource(file), key: Self.key, kind: .sealed)
        #expect(try Self.events(SegmentReader(source: GzipByteSource(source))) == expected)
        #expect(source.fileOffset == file.count)
        #expect(source.plaintextOffset == gzip.count)
    }

    /// The file the old writer produced: the second block authenticated as if
    /// it began 72 bytes further on. Readers must refuse it, naming the block.
    @Test func aBlockWrittenAtTheWrongOffsetFailsAuthentication() throws {
        let header = Self.header(.sealed)
        let cipher = try SegmentCipher(header: header, key: Self.key, encrypting: true)
        let plaintext = [UInt8](repeating: 0xAB, count: 66)
        var file = header.bytes
        try plaintext[0..<33].withUnsafeBytes { try cipher.appendBlock($0, fileOffset: file.count, to: &file) }
        let second = file.count  // 72 + 17 + 33 + 16 = 138
        try plaintext[33...].withUnsafeBytes {
            try cipher.appendBlock($0, fileOffset: second + EncryptedFileHeader.byteCount, final: true, to: &file)
        }
        let source = try DecryptingByteSource(MemoryByteSource(file), key: Self.key, kind: .sealed)
        var buffer = [UInt8](repeating: 0, count: 256)
        #expect(try buffer.withUnsafeMutableBytes { try source.read(into: $0) } == 33)
        let error = #expect(throws: SegmentError.self) { try buffer.withUnsafeMutableBytes { _ = try source.read(into: $0) } }
        #expect(error?.code == .authenticationFailed)
        #expect(error?.offset == 138)
    }

    /// Found by the decrypt target: after a block failed authentication, the
    /// next read handed out a negative byte count (the block's plaintext was
    /// wiped, its read position was not) and copied out of bounds. The seed
    /// is an encrypted sealed file of 64-byte blocks whose second block has
    /// one flipped ciphertext bit; every read after the error throws it again.
    @Test func readingOnAfterAnAuthenticationFailureThrowsAgain() throws {
        let input = try Self.seed("regression-read-after-authentication-failure")
        let source = try DecryptingByteSource(MemoryByteSource(Array(input.dropFirst())), key: Self.key, kind: .sealed)
        var buffer = [UInt8](repeating: 0, count: 256)
        #expect(try buffer.withUnsafeMutableBytes { try source.read(into: $0) } == 64)
        for _ in 0..<3 {
            let error = #expect(throws: SegmentError.self) { try buffer.withUnsafeMutableBytes { _ = try source.read(into: $0) } }
            #expect(error?.code == .authenticationFailed)
            #expect(error?.offset == EncryptedFileHeader.byteCount + 64 + SegmentCipher.blockOverhead)
        }
        #expect(source.plaintextOffset == 64)
    }

    /// Found by the decrypt target: an active file cut inside its second
    /// block (7 bytes of plaintext per block, the last byte cut) was reported
    /// `truncated` once, and the next read returned 0, a clean end.
    @Test func readingOnAfterATornBlockThrowsAgain() throws {
        let header = Self.header(.stream)
        let cipher = try SegmentCipher(header: header, key: Self.key, encrypting: true)
        var file = header.bytes
        let plaintext = Array("DISEG\r\n\u{1A}".utf8)
        try plaintext[0..<7].withUnsafeBytes { try cipher.appendBlock($0, fileOffset: file.count, to: &file) }
        try plaintext[7...].withUnsafeBytes { try cipher.appendBlock($0, fileOffset: file.count, to: &file) }
        file.removeLast()
        let source = try DecryptingByteSource(MemoryByteSource(file), key: Self.key, kind: .stream)
        var buffer = [UInt8](repeating: 0, count: 16)
        #expect(try buffer.withUnsafeMutableBytes { try source.read(into: $0) } == 7)
        for _ in 0..<3 {
            let error = #expect(throws: SegmentError.self) { try buffer.withUnsafeMutableBytes { _ = try source.read(into: $0) } }
            #expect(error?.code == .truncated)
        }
    }
}

// libFuzzer harness: the encrypted segment envelope (EncryptedFileHeader,
// SegmentCipher, DecryptingByteSource, EncryptedFileWriter) and the segment
// reader behind it, read as an encrypted store reads its files. Built and run
// by Scripts/fuzz.sh.
//
// The key is fixed: Fuzz/make-seeds.py encrypts the seeds in
// Fuzz/corpus/decrypt with the same 32 bytes. A fuzzer cannot forge a GCM
// tag, so mutations of an encrypted file mostly reach the checks before
// authentication (header, block headers and lengths, truncation, the final
// block); modes 2 and 3 encrypt mutated plaintext here, so mutations of the
// segment stream also travel through decryption into the reader.
//
// Byte 0: bits 0-1 the mode, bits 2-4 a block size (blockSizes), bits 5-7 a
// number of bytes cut from the end of the file encrypted here (cuts: a torn
// tail). The rest:
//   0: an encrypted sealed file (N.seg.gz): decrypted, inflated and read as
//      SegmentStore.sealedReader does, and decrypted whole as uploadBody does;
//   1: an encrypted active file (N.active): read as recovery does (block ends
//      recorded, no end frame required, the cut offset computed), and
//      decrypted whole as sealing does;
//   2: a plaintext segment stream, encrypted here as an active file, then
//      read as in 1: uncut it must give exactly what reading the plaintext
//      gives; cut, a prefix of it;
//   3: a plaintext segment stream, gzipped and encrypted here as a sealed
//      file, then read as in 0: uncut the same as reading the gzip bytes;
//      cut, a prefix of it and always an error (the final block is missing).
// In modes 0 and 1, bit 2 set makes the harness first recompute the CRC-32 of
// the header and of every block header, so that mutated lengths, flags,
// counters, kinds, versions and key checks reach the checks behind the CRCs.
// Every decrypting source that threw is read once more and must throw again.
@testable import IngestCore
import IngestSupport

// Small frame limit as in the segment harness (a declared 16 MiB frame
// would allocate 16 MiB per input); no gzip limits, as the store reads its
// own sealed files.
let limits = SegmentReader.Limits(maxFramePayloadBytes: 1 << 20, gzip: .unlimited)
let blockSizes = [1, 7, 16, 33, 100, 1000, 4096, 65536]
let cuts = [0, 1, 16, 17, 33, 49, 100, 1000]

/// The seeds' key (Fuzz/make-seeds.py: FUZZ_KEY).
let key: SegmentEncryptionKey = {
    do { return try SegmentEncryptionKey(bytes: Array("decrypt-fuzz-key-0123456789abcde".utf8)) } catch {
        fatalError("the harness key: \(error)")
    }
}()
let storeId = SegmentStoreID(bytes: Array(0..<16))!
let salt = [UInt8](repeating: 0x5A, count: 16)

/// What one read produced: its events, then how it stopped.
struct Outcome: Equatable {
    var events: [SegmentEvent] = []
    var error: String?

    func isPrefix(of other: Outcome) -> Bool {
        events.count <= other.events.count && other.events.prefix(events.count).elementsEqual(events)
    }
}

func describe(_ error: Error) -> String {
    if let error = error as? SegmentError { return error.code.description }
    return "\(type(of: error)): \(error)"
}

func readAll(_ reader: SegmentReader, into outcome: inout Outcome) throws {
    while let event = try reader.next() {
        outcome.events.append(event)
        if outcome.events.count > 1_000_000 { fatalError("the reader does not advance") }
    }
}

/// All bytes `source` delivers until it ends or throws.
func drain(_ source: SegmentByteSource) -> (bytes: [UInt8], error: String?) {
    var bytes: [UInt8] = []
    let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
    defer { chunk.deallocate() }
    do {
        while true {
            let n = try source.read(into: chunk)
            if n == 0 { return (bytes, nil) }
            guard n > 0, n <= chunk.count else { fatalError("read returned \(n)") }
            bytes.append(contentsOf: chunk[..<n])
            if bytes.count > 64 << 20 { fatalError("the decrypter produces more than the input could hold") }
        }
    } catch {
        // A source that failed stays failed: reading on must throw again,
        // never hand out bytes, end quietly or read out of bounds.
        if let n = try? source.read(into: chunk) { fatalError("read after \(describe(error)) returned \(n) instead of throwing") }
        return (bytes, describe(error))
    }
}

/// An encrypted sealed file read as SegmentStore.sealedReader and uploadBody read it.
func readSealed(_ file: [UInt8]) -> (outcome: Outcome, gzip: [UInt8], drainError: String?) {
    var outcome = Outcome()
    do {
        let source = try DecryptingByteSource(MemoryByteSource(file), key: key, kind: .sealed)
        let reader = try SegmentReader(source: GzipByteSource(source, limits: limits.gzip), limits: limits)
        try readAll(reader, into: &outcome)
        guard source.fileOffset <= file.count else { fatalError("fileOffset \(source.fileOffset) beyond \(file.count) bytes") }
    } catch {
        outcome.error = describe(error)
    }
    var gzip: [UInt8] = []
    var drainError: String?
    do {
        let source = try DecryptingByteSource(MemoryByteSource(file), key: key, kind: .sealed)
        (gzip, drainError) = drain(source)
        guard source.plaintextOffset == gzip.count else {
            fatalError("plaintextOffset \(source.plaintextOffset), \(gzip.count) bytes read")
        }
    } catch {
        drainError = describe(error)
    }
    return (outcome, gzip, drainError)
}

/// An encrypted active file read as SegmentStore.recoverActive and sealing read it.
func readActive(_ file: [UInt8]) -> (outcome: Outcome, stream: [UInt8], drainError: String?) {
    var outcome = Outcome()
    var decrypter: DecryptingByteSource?
    var reader: SegmentReader?
    do {
        decrypter = try DecryptingByteSource(MemoryByteSource(file), key: key, kind: .stream, recordBlockEnds: true)
        reader = try SegmentReader(source: decrypter!, limits: limits, requiresEnd: false)
        try readAll(reader!, into: &outcome)
    } catch {
        outcome.error = describe(error)
    }
    if let decrypter, let reader {
        // Where recovery would cut the file: a verified block end, before what was read.
        let cut = decrypter.fileOffset(forPlaintextOffset: reader.offsetAfterLastCommit)
        guard cut >= EncryptedFileHeader.byteCount, cut <= decrypter.fileOffset, decrypter.fileOffset <= file.count,
            reader.offsetAfterLastCommit <= decrypter.plaintextOffset,
            decrypter.blockEnds.contains(where: { $0.file == cut })
        else {
            fatalError(
                "recovery cut \(cut): fileOffset \(decrypter.fileOffset), file \(file.count) bytes, "
                    + "commit at \(reader.offsetAfterLastCommit) of \(decrypter.plaintextOffset)")
        }
    }
    var stream: [UInt8] = []
    var drainError: String?
    do {
        (stream, drainError) = drain(try DecryptingByteSource(MemoryByteSource(file), key: key, kind: .stream))
    } catch {
        drainError = describe(error)
    }
    return (outcome, stream, drainError)
}

/// Reads `plain` directly, as the reference for modes 2 and 3.
func reference(_ source: () throws -> SegmentReader) -> Outcome {
    var outcome = Outcome()
    do { try readAll(try source(), into: &outcome) } catch { outcome.error = describe(error) }
    return outcome
}

func header(_ kind: EncryptedFileHeader.Kind) -> EncryptedFileHeader {
    EncryptedFileHeader(kind: kind, storeId: storeId, segmentNumber: 7, salt: salt, keyCheck: key.checkValue)
}

/// `plain` as an active file: the header, then blocks of `blockBytes`.
func encryptActive(_ plain: [UInt8], blockBytes: Int) throws -> [UInt8] {
    let header = header(.stream)
    let cipher = try SegmentCipher(header: header, key: key, encrypting: true)
    var file = header.bytes
    var start = 0
    while start < plain.count {
        let end = min(plain.count, start + blockBytes)
        try plain.withUnsafeBytes {
            try cipher.appendBlock(UnsafeRawBufferPointer(rebasing: $0[start..<end]), fileOffset: file.count, to: &file)
        }
        start = end
    }
    return file
}

/// `gzip` as a sealed file, written by EncryptedFileWriter as the sealer does.
func encryptSealed(_ gzip: [UInt8], blockBytes: Int) throws -> [UInt8] {
    var file: [UInt8] = []
    let writer = try EncryptedFileWriter(header: header(.sealed), key: key, blockBytes: blockBytes) { file.append(contentsOf: $0) }
    try writer.write(gzip)
    try writer.finish()
    return file
}

/// Recomputes the header's CRC and every block header's CRC in `file`
/// (following the block lengths as stored).
func fixChecksums(_ file: inout [UInt8]) {
    func store(_ crc: UInt32, at offset: Int) {
        for i in 0..<4 { file[offset + i] = UInt8(truncatingIfNeeded: crc >> (8 * i)) }
    }
    guard file.count >= EncryptedFileHeader.byteCount else { return }
    store(file.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[0..<68])) }, at: 68)
    var at = EncryptedFileHeader.byteCount
    while at + SegmentCipher.blockHeaderSize <= file.count {
        store(file.withUnsafeBytes { CRC32.update(0, UnsafeRawBufferPointer(rebasing: $0[at..<(at + 13)])) }, at: at + 13)
        at += SegmentCipher.blockOverhead + Int(SegmentFormat.readLE(UInt32.self, file, at))
    }
}

func check(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    var rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let blockBytes = blockSizes[Int(data[0] >> 2) & 7]
    let cut = cuts[Int(data[0] >> 5)]
    do {
        switch data[0] & 3 {
        case 0:
            if data[0] & 4 != 0 { fixChecksums(&rest) }
            _ = readSealed(rest)
        case 1:
            if data[0] & 4 != 0 { fixChecksums(&rest) }
            _ = readActive(rest)
        case 2:
            let expected = reference { try SegmentReader(source: MemoryByteSource(rest), limits: limits, requiresEnd: false) }
            let file = try encryptActive(rest, blockBytes: blockBytes)
            let (outcome, stream, drainError) = readActive(Array(file.prefix(max(0, file.count - cut))))
            if cut == 0 {
                check(
                    outcome == expected,
                    "active: decrypted \(outcome.events.count) events, \(outcome.error ?? "no error"); plaintext \(expected.events.count), \(expected.error ?? "no error")"
                )
                check(
                    stream == rest && drainError == nil,
                    "active: decrypted \(stream.count) of \(rest.count) bytes, \(drainError ?? "no error")")
            } else {
                check(outcome.isPrefix(of: expected), "active, cut \(cut): the events are not a prefix of the plaintext's")
                check(rest.starts(with: stream), "active, cut \(cut): the decrypted bytes are not a prefix of the plaintext")
            }
        default:
            let gzip = try Gzip.compress(rest, level: 1)
            let expected = reference {
                try SegmentReader(source: GzipByteSource(MemoryByteSource(gzip), limits: limits.gzip), limits: limits)
            }
            let file = try encryptSealed(gzip, blockBytes: blockBytes)
            let (outcome, decrypted, drainError) = readSealed(Array(file.prefix(max(0, file.count - cut))))
            if cut == 0 {
                check(
                    outcome == expected,
                    "sealed: decrypted \(outcome.events.count) events, \(outcome.error ?? "no error"); plaintext \(expected.events.count), \(expected.error ?? "no error")"
                )
                check(
                    decrypted == gzip && drainError == nil,
                    "sealed: decrypted \(decrypted.count) of \(gzip.count) bytes, \(drainError ?? "no error")")
            } else {
                check(outcome.isPrefix(of: expected), "sealed, cut \(cut): the events are not a prefix of the plaintext's")
                check(outcome.error != nil, "sealed, cut \(cut): a sealed file without its final block was read without an error")
                check(
                    gzip.starts(with: decrypted) && drainError != nil,
                    "sealed, cut \(cut): \(decrypted.count) bytes decrypted, \(drainError ?? "no error")")
            }
        }
    } catch {
        fatalError("encrypting in the harness failed: \(error)")
    }
    return 0
}

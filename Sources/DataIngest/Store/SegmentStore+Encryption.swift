import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif

extension SegmentStore {
    /// The configured key, checked for size.
    static func encryptionKey(of configuration: Configuration) throws -> SegmentEncryptionKey? {
        guard let data = configuration.encryptionKey else { return nil }
        do {
            return try SegmentEncryptionKey(bytes: data)
        } catch {
            throw SegmentStoreError(code: .invalidEncryptionKey, message: error.message, path: configuration.directory)
        }
    }

    /// Checks the key against the store's `KEY_CHECK` file before recovery
    /// touches any segment, so a wrong or missing key never quarantines data.
    /// A new (or empty) store opened with a key gets a `KEY_CHECK`.
    static func checkEncryption(directory: String, directoryFD: Int32, key: SegmentEncryptionKey?, fs: any StoreFileSystem) throws {
        let path = directory + "/KEY_CHECK"
        if let data = FileManager.default.contents(atPath: path) {
            let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            let parts = text.split(separator: " ")
            guard parts.count == 2, parts[0] == "aes-256-gcm", parts[1].utf8.count == 32 else {
                throw SegmentStoreError(
                    code: .corruptSegment,
                    message: "KEY_CHECK is not in the expected form (\"aes-256-gcm <32 hex digits>\"); restore it from a backup", path: path
                )
            }
            guard let key else {
                throw SegmentStoreError(
                    code: .encryptionKeyRequired,
                    message:
                        "the store is encrypted: set SegmentStore.Configuration.encryptionKey (App.Configuration.segmentStore.encryptionKey) to the 32-byte key it was created with",
                    path: directory)
            }
            guard hex(key.checkValue) == parts[1].lowercased() else {
                throw SegmentStoreError(
                    code: .wrongEncryptionKey,
                    message:
                        "the store is encrypted with another key (its key check value does not match this key's); open it with the key it was created with. Nothing was read or changed",
                    path: directory)
            }
            return
        }
        guard let key else { return }
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        if let plain = names.first(where: { $0.hasSuffix(".seg.gz") || $0.hasSuffix(".active") }) {
            throw SegmentStoreError(
                code: .notEncrypted,
                message:
                    "an encryption key is set, but the store holds segments written without encryption (\(plain)); open it without the key until they are uploaded (pendingSegments() is empty), or use a new directory",
                path: directory)
        }
        try writeFileAtomically(path: path, bytes: Array("aes-256-gcm \(hex(key.checkValue))\n".utf8), directoryFD: directoryFD, fs: fs)
    }

    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// A reader over a sealed-format file of this store (a pending segment or
    /// a quarantine file), decrypting when the store is encrypted.
    func sealedReader(path: String) throws -> SegmentReader {
        let limits = SegmentReader.Limits(gzip: .unlimited)
        guard let encryptionKey else { return try SegmentReader(sealedFileAt: path, limits: limits) }
        let source = try DecryptingByteSource(FileByteSource(path: path), key: encryptionKey, kind: .sealed)
        return try SegmentReader(source: GzipByteSource(source, limits: limits.gzip), limits: limits)
    }

    /// The bytes of a pending segment as the server expects them: the
    /// standard gzip file, decrypted in memory when the store is encrypted.
    ///
    /// ```swift
    /// let body = try store.uploadBody(for: segment)   // POST as application/gzip
    /// ```
    /// - Throws: ``SegmentError`` (`authenticationFailed` for a changed file) or
    ///   ``SegmentStoreError`` when the file cannot be read.
    public func uploadBody(for segment: PendingSegment) throws -> Data {
        guard let encryptionKey else { return try Data(contentsOf: URL(fileURLWithPath: segment.path)) }
        let source = try DecryptingByteSource(FileByteSource(path: segment.path), key: encryptionKey, kind: .sealed)
        var body = Data(capacity: segment.byteCount)
        let chunk = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 << 10, alignment: 16)
        defer { chunk.deallocate() }
        while true {
            let n = try source.read(into: chunk)
            if n == 0 { break }
            body.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<n]))
        }
        return body
    }
}

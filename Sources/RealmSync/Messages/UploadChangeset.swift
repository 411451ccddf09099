import IngestSupport

/// One changeset inside an `upload` body: its cursor, origin and bytes
/// (`<client-version> <last-integrated-server-version> <origin-timestamp>
/// <origin-file-ident> <size> <bytes>`).
///
/// ```swift
/// for changeset in try upload.changesets() {
///     let instructions = try ChangesetDecoder.decodeAll(changeset.data)
/// }
/// ```
public struct UploadChangeset: Sendable, Hashable {
    /// The client version this changeset produced.
    public var clientVersion: UInt64
    /// The last server version the client had integrated when it was made.
    public var lastIntegratedServerVersion: UInt64
    /// When it was made: milliseconds since 2015-01-01T00:00:00Z (Realm's epoch).
    public var originTimestamp: UInt64
    /// The file it came from; 0 for the uploading client's own file.
    public var originFileIdent: UInt64
    /// The encoded changeset (see ``ChangesetDecoder``).
    public var data: [UInt8]

    /// A changeset with the given fields.
    public init(
        clientVersion: UInt64, lastIntegratedServerVersion: UInt64, originTimestamp: UInt64,
        originFileIdent: UInt64, data: [UInt8]
    ) {
        self.clientVersion = clientVersion
        self.lastIntegratedServerVersion = lastIntegratedServerVersion
        self.originTimestamp = originTimestamp
        self.originFileIdent = originFileIdent
        self.data = data
    }
}

/// One changeset inside a `download` body (`<server-version> <client-version>
/// <origin-timestamp> <origin-file-ident> <original-size> <size> <bytes>`).
public struct DownloadChangeset: Sendable, Hashable {
    /// The server version this changeset produced.
    public var serverVersion: UInt64
    /// The last client version of the receiving client integrated into it.
    public var lastIntegratedClientVersion: UInt64
    /// When it was made (milliseconds since 2015-01-01).
    public var originTimestamp: UInt64
    /// The file it came from.
    public var originFileIdent: UInt64
    /// Its size before the server transformed it.
    public var originalSize: UInt64
    /// The encoded changeset.
    public var data: [UInt8]

    /// A changeset with the given fields.
    public init(
        serverVersion: UInt64, lastIntegratedClientVersion: UInt64, originTimestamp: UInt64,
        originFileIdent: UInt64, originalSize: UInt64, data: [UInt8]
    ) {
        self.serverVersion = serverVersion
        self.lastIntegratedClientVersion = lastIntegratedClientVersion
        self.originTimestamp = originTimestamp
        self.originFileIdent = originFileIdent
        self.originalSize = originalSize
        self.data = data
    }
}

/// The changeset list of an upload or download body: for each changeset,
/// decimal numbers each followed by one space (the last one its size), then
/// its bytes.
enum ChangesetList {
    /// Appends one changeset: its numbers, its size, its bytes.
    static func append(_ numbers: [UInt64], _ data: [UInt8], to body: inout [UInt8]) {
        for number in numbers + [UInt64(data.count)] {
            body.append(contentsOf: String(number).utf8)
            body.append(0x20)
        }
        body.append(contentsOf: data)
    }

    /// The changesets of `body`, each with the numbers named by `fields` (the
    /// size, which comes last, not included).
    static func parse(_ body: [UInt8], fields: [StaticString], limits: SyncMessageLimits) throws(SyncMessageError)
        -> [(numbers: [UInt64], data: [UInt8])]
    {
        var reader = ChangesetListReader(body)
        var changesets: [(numbers: [UInt64], data: [UInt8])] = []
        while !reader.atEnd {
            guard changesets.count < limits.maxChangesets else {
                throw SyncMessageError(
                    .limitExceeded, offset: reader.position,
                    message: "more than \(limits.maxChangesets) changesets in one body")
            }
            var numbers: [UInt64] = []
            for field in fields { numbers.append(try reader.number(field)) }
            let size = try reader.number("size")
            changesets.append((numbers, try reader.bytes(size)))
        }
        return changesets
    }

    /// A body as sent, uncompressed: inflated (zlib) to exactly
    /// `uncompressedSize` bytes when compressed.
    static func uncompressed(
        _ body: [UInt8], isCompressed: Bool, uncompressedSize: Int,
        limits: SyncMessageLimits
    ) throws(SyncMessageError) -> [UInt8] {
        guard uncompressedSize <= limits.maxBodyBytes else {
            throw SyncMessageError(
                .limitExceeded, offset: 0,
                message: "a body of \(uncompressedSize) bytes uncompressed; the limit is \(limits.maxBodyBytes)")
        }
        guard isCompressed else { return body }
        let plain: [UInt8]
        do {
            // The declared size bounds the output; no ratio limit is needed on top.
            plain = try Gzip.decompress(
                body, limits: GzipLimits(maxOutputBytes: uncompressedSize, maxRatio: .max, ratioCheckFloorBytes: .max),
                wrapper: .zlib)
        } catch {
            throw SyncMessageError(.badDecompression, offset: 0, message: "the body does not inflate: \(error)")
        }
        guard plain.count == uncompressedSize else {
            throw SyncMessageError(
                .badDecompression, offset: 0,
                message: "the body inflates to \(plain.count) bytes, the header says \(uncompressedSize)")
        }
        return plain
    }
}

/// Reads the changeset list of an upload or download body: numbers each
/// followed by one space, then the changeset's bytes.
struct ChangesetListReader {
    let body: [UInt8]
    private(set) var position = 0

    init(_ body: [UInt8]) { self.body = body }

    var atEnd: Bool { position == body.count }

    mutating func number(_ name: StaticString) throws(SyncMessageError) -> UInt64 {
        let start = position
        var value: UInt64 = 0
        while position < body.count, body[position] != 0x20 {
            let byte = body[position]
            guard (0x30...0x39).contains(byte), position - start < 20 else {
                throw SyncMessageError(
                    .badChangesetHeader, offset: position, message: "\(name) in a changeset header is not a decimal number")
            }
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(UInt64(byte - 0x30))
            guard !overflow1 && !overflow2 else {
                throw SyncMessageError(.badChangesetHeader, offset: start, message: "\(name) in a changeset header is out of range")
            }
            value = sum
            position += 1
        }
        guard position > start, position < body.count else {
            throw SyncMessageError(.badChangesetHeader, offset: position, message: "a changeset header ends before \(name)")
        }
        position += 1  // the space
        return value
    }

    mutating func bytes(_ count: UInt64) throws(SyncMessageError) -> [UInt8] {
        guard count <= UInt64(body.count - position) else {
            throw SyncMessageError(
                .badChangesetSize, offset: position,
                message: "a changeset of \(count) bytes, but only \(body.count - position) are left in the body")
        }
        let end = position + Int(count)
        defer { position = end }
        return Array(body[position..<end])
    }
}

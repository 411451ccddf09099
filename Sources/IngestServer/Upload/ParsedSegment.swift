import IngestCore
import IngestSupport

/// An uploaded sealed segment, inflated within limits and read completely:
/// its header, its records in stream order and the transaction each belongs to.
///
/// Every record must be followed by its commit frame and the segment must
/// close with its end frame; anything else (including records after the last
/// commit) is a malformed segment and nothing of it is written.
struct ParsedSegment {
    var header: SegmentHeader
    var records: [SegmentRecord] = []
    /// `transactionNumbers[i]` is the transaction of `records[i]`.
    var transactionNumbers: [UInt64] = []
    var transactionCount = 0
    /// The inflated stream's size in bytes.
    var inflatedBytes = 0
    /// The schema the client put in the header (nil for the empty document `{}`).
    var clientSchema: Schema?
    /// The records as the write path takes them.
    var batch: IngestBatch {
        IngestBatch(
            records: records, transactionNumbers: transactionNumbers, transactionCount: transactionCount,
            clientSchema: clientSchema, createdAtMillis: header.createdAtMillis)
    }
    /// Why the header's schema cannot be read (400 `malformed_schema`),
    /// raised after the receipt check so a segment stored before still replays.
    var schemaError: UploadError?

    init(gzip body: [UInt8], limits: GzipLimits) throws(UploadError) {
        do {
            let reader = try SegmentReader(gzipBytes: body, limits: SegmentReader.Limits(gzip: limits))
            header = reader.header
            var pending = 0
            while let event = try reader.next() {
                // Consumed: binding the record from a borrowed event copied it
                // (a retain and release of its name and document per record).
                switch consume event {
                case .record(let record):
                    records.append(record)
                    pending += 1
                case .commit(let commit):
                    transactionNumbers.append(contentsOf: repeatElement(commit.transactionNumber, count: pending))
                    pending = 0
                    transactionCount += 1
                case .end:
                    break
                }
            }
            inflatedBytes = reader.offset
        } catch let error as SegmentError {
            throw Self.uploadError(error)
        } catch {
            throw UploadError(.invalidRequest, code: "malformed_segment", "the segment cannot be read: \(error)")
        }
        do {
            clientSchema = try Self.clientSchema(header.schema)
        } catch {
            schemaError = error
        }
    }

    /// The header's schema document (Docs/SegmentFormat.md, "The schema
    /// document"): nil when it is empty, otherwise it must decode to a valid
    /// synced schema; a document the server cannot read is refused, never
    /// ignored.
    static func clientSchema(_ bytes: [UInt8]) throws(UploadError) -> Schema? {
        guard bytes.count > SegmentFormat.emptyDocument.count else { return nil }
        let hint = "send {} or a document as Docs/SegmentFormat.md (\"The schema document\") specifies"
        let document: BSONDocument
        do {
            document = try BSONDocument(bson: bytes)
        } catch {
            throw UploadError(
                .invalidRequest, code: "malformed_schema",
                "the segment header's schema is not a valid BSON document (\(error)); \(hint)")
        }
        do {
            let schema = try Schema(bsonDocument: document)
            try schema.checkStructure(synced: true)
            return schema.objectSchemas.isEmpty ? nil : schema
        } catch {
            throw UploadError(
                .invalidRequest, code: "malformed_schema",
                "the segment header's schema cannot be read: \(error.message); \(hint)")
        }
    }

    static func uploadError(_ error: SegmentError) -> UploadError {
        if error.code == .compression {
            if error.gzipCode == .limitExceeded {
                return UploadError(
                    .tooLarge, code: "inflate_limit_exceeded",
                    "the segment inflates beyond the server's limits (\(error.message)); "
                        + "seal smaller segments")
            }
            return UploadError(.invalidRequest, code: "malformed_gzip", "the body is not a valid gzip stream: \(error.message)")
        }
        if error.code == .unsupportedVersion {
            return UploadError(.invalidRequest, code: "unsupported_segment_version", error.message)
        }
        if error.code == .frameTooLarge {
            return UploadError(.tooLarge, code: "frame_too_large", error.message)
        }
        return UploadError(
            .invalidRequest, code: "malformed_segment",
            "the segment is malformed (\(error.code.rawValue)\(error.offset.map { " at offset \($0)" } ?? "")): \(error.message)")
    }
}

/// Records to validate and write with one receipt, whatever front door
/// brought them: a sealed segment (``ParsedSegment/batch``) or the
/// changesets of a Realm sync upload.
struct IngestBatch {
    /// The records in order (``SegmentRecord/index`` names them in rejections).
    var records: [SegmentRecord]
    /// `transactionNumbers[i]` is the client transaction of `records[i]`.
    var transactionNumbers: [UInt64]
    /// Transactions in the batch.
    var transactionCount: Int
    /// The schema the client declared, if any (development mode learns from it).
    var clientSchema: Schema?
    /// When the client made the records, milliseconds since 1970 (the lag metric).
    var createdAtMillis: Int64
    /// Objects the front door rejected before they became records (a Realm
    /// changeset's object that builds no valid document), with indexes after
    /// the records'; their transactions are rejected whole.
    var rejectedBefore: [UploadAnswer.RejectedObject] = []
}

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
    /// The schema the client put in the header, if it has a readable one.
    var clientSchema: Schema?

    init(gzip body: [UInt8], limits: GzipLimits) throws(UploadError) {
        do {
            let reader = try SegmentReader(gzipBytes: body, limits: SegmentReader.Limits(gzip: limits))
            header = reader.header
            var pending = 0
            while let event = try reader.next() {
                switch event {
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
        if header.schema.count > SegmentFormat.emptyDocument.count,
           let document = try? BSONDocument(bson: header.schema) {
            clientSchema = try? Schema(bsonDocument: document)
        }
    }

    static func uploadError(_ error: SegmentError) -> UploadError {
        if error.code == .compression {
            if error.gzipCode == .limitExceeded {
                return UploadError(.tooLarge, code: "inflate_limit_exceeded",
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
        return UploadError(.invalidRequest, code: "malformed_segment",
                           "the segment is malformed (\(error.code.rawValue)\(error.offset.map { " at offset \($0)" } ?? "")): \(error.message)")
    }
}

import IngestCore

/// What an upload came to when it did not fail: stored now, or answered
/// from the receipt of an earlier upload of the same segment. Either way
/// the segment is acknowledged, and ``body`` is the answer to send (the
/// JSON of Docs/Protocol.md, "The result"), the same bytes for every upload
/// of one segment.
///
/// ```swift
/// let result = try uploads.upload(appId: appId, token: token, body: segment)
/// send(result.body, replayed: result.isReplay)
/// let rejected = try result.answer().rejectedObjects
/// ```
package enum UploadResult: Sendable {
    /// The accepted objects and the receipt were written now; `answer` is
    /// what was stored with the receipt, `body` its bytes.
    case stored(UploadAnswer, body: [UInt8])
    /// The segment had a receipt: nothing was written, `body` is the answer
    /// stored the first time.
    case replayed(body: [UInt8])

    /// The answer's JSON bytes.
    package var body: [UInt8] {
        switch self {
        case .stored(_, let body), .replayed(let body): body
        }
    }

    /// Whether the answer came from an earlier upload's receipt.
    package var isReplay: Bool {
        if case .replayed = self { return true }
        return false
    }

    /// The answer (decoded from the stored bytes for a replay).
    package func answer() throws(ProtocolBodyError) -> UploadAnswer {
        switch self {
        case .stored(let answer, _): answer
        case .replayed(let body): try UploadAnswer(jsonBody: body)
        }
    }
}

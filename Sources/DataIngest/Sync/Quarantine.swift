import Foundation
import IngestCore
#if canImport(Glibc)
import Glibc
#endif

/// One object in quarantine: refused by the server, or salvaged from a
/// damaged segment.
public struct QuarantinedObject: Sendable {
    /// The segment it was in.
    public var segmentNumber: UInt64
    /// Its index in that segment (the server's `index`).
    public var index: Int
    /// Its collection.
    public var collection: String
    /// The server's code (`wrongType`, `transactionRejected`, `malformed_segment`, …),
    /// or `corruptSegment` for objects salvaged from a damaged file.
    public var errorCode: String
    /// The server's reason, or the damage found.
    public var reason: String
    /// The object itself.
    public var document: BSONDocument
}

/// The quarantine of a user's segment store: objects the server refused
/// for good, kept with its reasons until the app retries or discards them.
///
/// ```swift
/// let quarantine = try user.session.quarantine()
/// for object in try quarantine.objects() { print(object.errorCode, object.reason) }
/// try quarantine.exportExtendedJSON(to: "/tmp/rejected.jsonl")
/// try quarantine.discard()
/// ```
public struct Quarantine: Sendable {
    let store: SegmentStore

    /// Every quarantined object, oldest segment first.
    public func objects() throws -> [QuarantinedObject] {
        var result: [QuarantinedObject] = []
        for report in store.quarantineReports() {
            result += try objects(of: report)
        }
        return result
    }

    /// The number of quarantined objects.
    public var count: Int {
        store.quarantineReports().reduce(0) { $0 + ($1.kind == "rejected" ? $1.rejections.count : $1.salvagedRecords) }
    }

    /// The quarantine as JSON Lines: one object per line with `segment`,
    /// `index`, `collection`, `error_code`, `reason` and `document` (the
    /// object in Extended JSON, `mode`).
    public func exportExtendedJSON(mode: ExtendedJSONMode = .relaxed) throws -> String {
        var out = ""
        for object in try objects() {
            let meta: [String: Any] = [
                "segment": object.segmentNumber, "index": object.index, "collection": object.collection,
                "error_code": object.errorCode, "reason": object.reason,
            ]
            let data = try JSONSerialization.data(withJSONObject: meta, options: [.sortedKeys])
            var line = String(decoding: data, as: UTF8.self)
            line.removeLast()  // the closing brace: the document follows
            out += line + ",\"document\":" + object.document.extendedJSON(mode) + "}\n"
        }
        return out
    }

    /// Writes ``exportExtendedJSON(mode:)`` to `path`.
    public func exportExtendedJSON(to path: String, mode: ExtendedJSONMode = .relaxed) throws {
        try Data(exportExtendedJSON(mode: mode).utf8).write(to: URL(fileURLWithPath: path), options: .atomic)
    }

    /// Commits the quarantined objects again (for example after the server's
    /// schema was fixed) and removes them from quarantine. The objects of one
    /// quarantined segment go back as one transaction: all or nothing again.
    /// Returns the number of objects re-committed.
    @discardableResult
    public func retry() throws -> Int {
        var total = 0
        for report in store.quarantineReports() {
            let objects = try objects(of: report)
            if !objects.isEmpty {
                try store.commit { writer in
                    for object in objects {
                        try writer.append(collection: object.collection) { object.document.appendBSON(to: &$0) }
                    }
                }
            }
            remove(report)
            total += objects.count
        }
        return total
    }

    /// Deletes the quarantined objects for good. Returns how many.
    @discardableResult
    public func discard() throws -> Int {
        var total = 0
        for report in store.quarantineReports() {
            total += report.kind == "rejected" ? report.rejections.count : report.salvagedRecords
            remove(report)
        }
        return total
    }

    private func remove(_ report: QuarantineReport) {
        if let file = report.recordsFile { unlink(file) }
        if let file = report.originalFile { unlink(file) }
        unlink("\(store.quarantineDirectory)/\(SegmentStore.fileName(report.segmentNumber)).report.json")
    }

    private func objects(of report: QuarantineReport) throws -> [QuarantinedObject] {
        guard let file = report.recordsFile, FileManager.default.fileExists(atPath: file) else { return [] }
        let reader = try store.sealedReader(path: file)
        var result: [QuarantinedObject] = []
        var position = 0
        while let event = try reader.next() {
            guard case .record(let record) = event else { continue }
            let document = try BSONDocument(bson: record.document)
            if report.kind == "rejected", position < report.rejections.count {
                let rejection = report.rejections[position]
                let (code, reason) = Self.decodeReason(rejection.reason)
                result.append(
                    QuarantinedObject(
                        segmentNumber: report.segmentNumber, index: rejection.index,
                        collection: record.collection, errorCode: code, reason: reason, document: document))
            } else {
                result.append(
                    QuarantinedObject(
                        segmentNumber: report.segmentNumber, index: record.index,
                        collection: record.collection, errorCode: "corruptSegment",
                        reason: report.error ?? "damaged segment", document: document))
            }
            position += 1
        }
        return result
    }

    /// The store keeps one reason string; the server's code goes in front, in brackets.
    static func encodeReason(code: String, reason: String) -> String { "[\(code)] \(reason)" }

    static func decodeReason(_ text: String) -> (code: String, reason: String) {
        guard text.hasPrefix("["), let close = text.firstIndex(of: "]") else { return ("rejected", text) }
        let code = String(text[text.index(after: text.startIndex)..<close])
        let rest = text[text.index(after: close)...].drop { $0 == " " }
        return (code, String(rest))
    }
}

extension SyncSession {
    /// The quarantine of this session's store.
    public func quarantine() throws -> Quarantine {
        Quarantine(store: try openStore())
    }
}

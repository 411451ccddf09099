import Foundation
import IngestCore
import Logging

// The writer thread's hot path: each queued event is written as one BSON
// document straight into the transaction's buffer, in ``IngestLogEvent``'s field
// order and with the types its schema gives them, instead of filling an
// `IngestLogEvent` instance and encoding it through the generic object path,
// which dominated the writer thread's profile (Docs/Logging.md, "Measuring").
extension LogWriter {
    /// ``IngestLogEvent``'s fields, in declaration order.
    private enum Keys {
        static let id = EncodedKey("_id")
        static let timestamp = EncodedKey("timestamp")
        static let level = EncodedKey("level")
        static let label = EncodedKey("label")
        static let message = EncodedKey("message")
        static let metadata = EncodedKey("metadata")
        static let source = EncodedKey("source")
        static let file = EncodedKey("file")
        static let function = EncodedKey("function")
        static let line = EncodedKey("line")
        static let host = EncodedKey("host")
        static let pid = EncodedKey("pid")
        static let appVersion = EncodedKey("appVersion")
        static let error = EncodedKey("error")
        static let errorType = EncodedKey("type")
        static let errorMessage = EncodedKey("message")
    }

    /// Encodes `event` as an ``IngestLogEvent`` document with a new `_id`.
    /// `inout` so that the writer passes the queued event in place: passed
    /// by value out of its batch, it was a copy (each string retained and
    /// released once more).
    static func encode(
        _ event: inout PendingLogEvent, host: String, pid: Int, appVersion: String,
        into encoder: inout BSONRecordEncoder
    ) {
        let start = encoder.beginDocument()
        encoder.key(BSONType.objectId, Keys.id)
        encoder.objectId(ObjectId.generate())
        // As `Date` is stored: whole milliseconds, rounded down.
        encoder.key(BSONType.datetime, Keys.timestamp)
        let (millis, rest) = event.unixNanoseconds.quotientAndRemainder(dividingBy: 1_000_000)
        encoder.int64(rest < 0 ? millis - 1 : millis)
        encoder.key(BSONType.string, Keys.level)
        encoder.string(event.level.rawValue)
        encoder.key(BSONType.string, Keys.label)
        encoder.string(event.label)
        encoder.key(BSONType.string, Keys.message)
        encoder.string(event.messageText)  // formatted here, on the writer thread
        if let swiftLog = event.swiftLog {
            encodeSwiftLogMetadata(swiftLog, into: &encoder)  // merged here, on the writer thread
        } else if event.loggerMetadata?.isEmpty ?? true, event.providedMetadata?.isEmpty ?? true,
            case .entries(let entries)? = event.callMetadata?.storage, entries.count == 1
        {
            // One entry written at the call and nothing to merge: encoded
            // as it is, without making a dictionary of it.
            encoder.key(BSONType.document, Keys.metadata)
            let start = encoder.beginDocument()
            encodeValue(entries[0].1, name: fieldName(entries[0].0), into: &encoder)
            encoder.endDocument(start)
        } else {
            encodeMetadata(event.metadata, into: &encoder)  // merged here, on the writer thread
        }
        encoder.key(BSONType.string, Keys.source)
        encoder.string(event.sourceText)
        encoder.key(BSONType.string, Keys.file)
        encoder.string(event.file)
        encoder.key(BSONType.string, Keys.function)
        encoder.string(event.function)
        encoder.key(BSONType.int64, Keys.line)
        encoder.int64(Int64(truncatingIfNeeded: event.line))
        encoder.key(BSONType.string, Keys.host)
        encoder.string(host)
        encoder.key(BSONType.int64, Keys.pid)
        encoder.int64(Int64(pid))
        encoder.key(BSONType.string, Keys.appVersion)
        encoder.string(appVersion)
        // Only with an error: without one the field is absent (null to the
        // schema), so a server whose configured LogEvent schema predates
        // the field keeps accepting every event that has none.
        if let error = event.error {
            encoder.key(BSONType.document, Keys.error)
            let errorStart = encoder.beginDocument()
            encoder.key(BSONType.string, Keys.errorType)
            encoder.string(error.type)
            encoder.key(BSONType.string, Keys.errorMessage)
            encoder.string(error.message)
            encoder.endDocument(errorStart)
        }
        encoder.endDocument(start)
    }

    /// `metadata` as the event's `metadata` field: a document, or null when empty.
    private static func encodeMetadata(_ metadata: IngestLogger.Metadata, into encoder: inout BSONRecordEncoder) {
        if metadata.isEmpty {
            encoder.key(BSONType.null, Keys.metadata)
        } else {
            encoder.key(BSONType.document, Keys.metadata)
            encodeEntries(metadata, into: &encoder, encodeValue)
        }
    }

    /// A metadata dictionary (``IngestLogger``'s or swift-log's) as an
    /// embedded document: keys made valid field names (``fieldName(_:)``),
    /// sorted (as a mixed dictionary is stored), one entry per resulting key,
    /// each value written by `encodeValue`.
    private static func encodeEntries<Value>(
        _ values: [String: Value], into encoder: inout BSONRecordEncoder,
        _ encodeValue: (Value, String, inout BSONRecordEncoder) -> Void
    ) {
        let start = encoder.beginDocument()
        if values.count == 1, let (key, value) = values.first {
            encodeValue(value, fieldName(key), &encoder)
        } else {
            var entries = values.map { (name: fieldName($0.key), value: $0.value) }
            entries.sort { $0.name < $1.name }
            var previous: String?
            for entry in entries where entry.name != previous {
                previous = entry.name
                encodeValue(entry.value, entry.name, &encoder)
            }
        }
        encoder.endDocument(start)
    }

    /// An array of metadata values, named `name`.
    private static func encodeArray<Value>(
        _ values: [Value], name: String, into encoder: inout BSONRecordEncoder,
        _ encodeValue: (Value, String, inout BSONRecordEncoder) -> Void
    ) {
        encoder.key(BSONType.array, name: name)
        let start = encoder.beginDocument()
        for (index, element) in values.enumerated() {
            encodeValue(element, String(index), &encoder)
        }
        encoder.endDocument(start)
    }

    private static func encodeValue(_ value: IngestLogger.MetadataValue, name: String, into encoder: inout BSONRecordEncoder) {
        switch value {
        case .string(let text), .stringConvertible(let text):
            encoder.key(BSONType.string, name: name)
            encoder.string(text)
        case .array(let values):
            encodeArray(values, name: name, into: &encoder, encodeValue)
        case .dictionary(let values):
            encoder.key(BSONType.document, name: name)
            encodeEntries(values, into: &encoder, encodeValue)
        }
    }

    // MARK: swift-log's metadata

    /// A swift-log call's metadata: handler, then provider, then call (later
    /// wins on equal keys), as swift-log's handlers merge it; a document, or
    /// null when all three are empty. One part alone is encoded as it is.
    private static func encodeSwiftLogMetadata(
        _ parts: PendingLogEvent.SwiftLogCall,
        into encoder: inout BSONRecordEncoder
    ) {
        let handler = parts.handlerMetadata.flatMap { $0.isEmpty ? nil : $0 }
        let provided = parts.providedMetadata.flatMap { $0.isEmpty ? nil : $0 }
        let call = parts.event.metadata.flatMap { $0.isEmpty ? nil : $0 }
        let merged: Logging.Logger.Metadata
        switch (handler, provided, call) {
        case (nil, nil, nil):
            encoder.key(BSONType.null, Keys.metadata)
            return
        case (let only?, nil, nil), (nil, let only?, nil), (nil, nil, let only?):
            merged = only
        default:
            var all = handler ?? [:]
            if let provided { all.merge(provided) { _, new in new } }
            if let call { all.merge(call) { _, new in new } }
            merged = all
        }
        encoder.key(BSONType.document, Keys.metadata)
        encodeEntries(merged, into: &encoder, encodeSwiftLogValue)
    }

    /// A swift-log metadata value as structured data: a string; a
    /// string-convertible that is a `Bool`, an integer or a floating-point
    /// number as a BSON bool, int64 or double (an unsigned value above
    /// `Int64.max` as its text), any other as its `description`; a
    /// dictionary as an embedded document; an array as an array.
    private static func encodeSwiftLogValue(
        _ value: Logging.Logger.MetadataValue, name: String,
        into encoder: inout BSONRecordEncoder
    ) {
        switch value {
        case .string(let text):
            encoder.key(BSONType.string, name: name)
            encoder.string(text)
        case .stringConvertible(let convertible):
            encodeConvertible(convertible, name: name, into: &encoder)
        case .array(let values):
            encodeArray(values, name: name, into: &encoder, encodeSwiftLogValue)
        case .dictionary(let values):
            encoder.key(BSONType.document, name: name)
            encodeEntries(values, into: &encoder, encodeSwiftLogValue)
        }
    }

    private static func encodeConvertible(
        _ value: any CustomStringConvertible & Sendable, name: String,
        into encoder: inout BSONRecordEncoder
    ) {
        switch value {
        case let flag as Bool:
            encoder.key(BSONType.bool, name: name)
            encoder.bool(flag)
        case let number as any BinaryInteger:
            if let exact = Int64(exactly: number) {
                encoder.key(BSONType.int64, name: name)
                encoder.int64(exact)
            } else {
                encoder.key(BSONType.string, name: name)
                encoder.string(value.description)
            }
        case let number as Double:
            encoder.key(BSONType.double, name: name)
            encoder.double(number)
        case let number as Float:
            encoder.key(BSONType.double, name: name)
            encoder.double(Double(number))
        default:
            encoder.key(BSONType.string, name: name)
            encoder.string(value.description)
        }
    }

    /// `.`, NUL and a leading `$` are not allowed in field names: replaced by `_`.
    static func fieldName(_ key: String) -> String {
        if !key.isEmpty && !key.hasPrefix("$") && !key.utf8.contains(UInt8(ascii: ".")) && !key.utf8.contains(0) {
            return key
        }
        if key.isEmpty { return "_" }
        var scalars = String.UnicodeScalarView()
        for (index, scalar) in key.unicodeScalars.enumerated() {
            scalars.append(scalar == "." || scalar == "\0" || (index == 0 && scalar == "$") ? "_" : scalar)
        }
        return String(scalars)
    }

    /// `Module/File.swift` → `Module`, searching the UTF-8 bytes: a
    /// `Character` search showed in the writer thread's profile.
    static func module(ofFileID fileID: String) -> String {
        guard let slash = fileID.utf8.firstIndex(of: UInt8(ascii: "/")) else { return fileID }
        return String(fileID[..<slash])
    }
}

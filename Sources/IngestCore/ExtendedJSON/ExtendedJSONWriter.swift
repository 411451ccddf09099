/// Writes BSON as compact Extended JSON v2 text (no whitespace), keys in
/// document order, wrapper keys in the order the specification gives.
import IngestSupport
struct ExtendedJSONWriter {
    let mode: ExtendedJSONMode
    var out: [UInt8] = []

    init(mode: ExtendedJSONMode) {
        self.mode = mode
    }

    mutating func write(_ document: BSONDocument) {
        out.append(UInt8(ascii: "{"))
        for (index, field) in document.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.appendString(field.key, to: &out)
            out.append(UInt8(ascii: ":"))
            write(field.value)
        }
        out.append(UInt8(ascii: "}"))
    }

    private mutating func raw(_ text: StaticString) {
        out.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func raw(_ text: String) {
        out.append(contentsOf: text.utf8)
    }

    private mutating func string(_ text: String) {
        JSONValue.appendString(text, to: &out)
    }

    mutating func write(_ value: BSON) {
        switch value {
        case .double(let number):
            if mode == .relaxed && number.isFinite {
                raw(Self.doubleText(number))
            } else {
                raw(#"{"$numberDouble":""#)
                raw(Self.doubleText(number))
                raw(#""}"#)
            }
        case .string(let text):
            string(text)
        case .document(let document):
            write(document)
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                write(element)
            }
            out.append(UInt8(ascii: "]"))
        case .binary(let binary):
            raw(#"{"$binary":{"base64":""#)
            Base64.encode(binary.bytes, to: &out)
            raw(#"","subType":""#)
            Self.appendHexByte(binary.subtype, to: &out)
            raw(#""}}"#)
        case .undefined:
            raw(#"{"$undefined":true}"#)
        case .objectId(let id):
            raw(#"{"$oid":""#)
            raw(id.hex)
            raw(#""}"#)
        case .bool(let flag):
            raw(flag ? "true" : "false")
        case .datetime(let milliseconds):
            if mode == .relaxed && ISODate.relaxedRange.contains(milliseconds) {
                raw(#"{"$date":""#)
                raw(ISODate.format(milliseconds: milliseconds))
                raw(#""}"#)
            } else {
                raw(#"{"$date":{"$numberLong":""#)
                raw(String(milliseconds))
                raw(#""}}"#)
            }
        case .null:
            raw("null")
        case .regex(let pattern, let options):
            raw(#"{"$regularExpression":{"pattern":"#)
            string(pattern)
            raw(#","options":"#)
            string(options)
            raw("}}")
        case .dbPointer(let ref, let id):
            raw(#"{"$dbPointer":{"$ref":"#)
            string(ref)
            raw(#","$id":{"$oid":""#)
            raw(id.hex)
            raw(#""}}}"#)
        case .javascript(let code):
            raw(#"{"$code":"#)
            string(code)
            raw("}")
        case .symbol(let symbol):
            raw(#"{"$symbol":"#)
            string(symbol)
            raw("}")
        case .javascriptWithScope(let code, let scope):
            raw(#"{"$code":"#)
            string(code)
            raw(#","$scope":"#)
            write(scope)
            raw("}")
        case .int32(let number):
            if mode == .relaxed {
                raw(String(number))
            } else {
                raw(#"{"$numberInt":""#)
                raw(String(number))
                raw(#""}"#)
            }
        case .timestamp(let timestamp):
            raw(#"{"$timestamp":{"t":"#)
            raw(String(timestamp.seconds))
            raw(#","i":"#)
            raw(String(timestamp.increment))
            raw("}}")
        case .int64(let number):
            if mode == .relaxed {
                raw(String(number))
            } else {
                raw(#"{"$numberLong":""#)
                raw(String(number))
                raw(#""}"#)
            }
        case .decimal128(let decimal):
            raw(#"{"$numberDecimal":""#)
            raw(decimal.description)
            raw(#""}"#)
        case .minKey:
            raw(#"{"$minKey":1}"#)
        case .maxKey:
            raw(#"{"$maxKey":1}"#)
        }
    }

    /// The shortest text that reads back as the same double, with an
    /// upper-case exponent without leading zeros (`1.0`, `-0.0`,
    /// `1.2345678921232E+18`, `5E-324`); `Infinity`, `-Infinity`, `NaN`.
    static func doubleText(_ number: Double) -> String {
        if number.isNaN { return "NaN" }
        if number.isInfinite { return number < 0 ? "-Infinity" : "Infinity" }
        let text = number.description  // shortest round-trip digits
        guard let e = text.utf8.firstIndex(of: UInt8(ascii: "e")) else { return text }
        var result = String(text[..<e]) + "E"
        var rest = text[text.index(after: e)...]
        if rest.first == "-" || rest.first == "+" {
            result.append(rest.removeFirst())
        } else {
            result.append("+")
        }
        let digits = rest.drop { $0 == "0" }
        result += digits.isEmpty ? "0" : String(digits)
        return result
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    static func appendHexByte(_ byte: UInt8, to out: inout [UInt8]) {
        out.append(hexDigits[Int(byte >> 4)])
        out.append(hexDigits[Int(byte & 0xF)])
    }
}

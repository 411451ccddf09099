/// Turns parsed JSON into BSON by the Extended JSON v2 rules: canonical
/// and relaxed forms, plus the legacy forms MongoDB tools still emit
/// (`{"$binary": "…", "$type": "…"}`, `{"$regex": "…", "$options": "…"}`).
import IngestSupport
enum ExtendedJSONReader {
    /// Keys that make an object a type wrapper: an object holding any of
    /// them must be exactly one of the wrappers, or it is an error.
    private static let wrapperKeys: Set<String> = [
        "$oid", "$symbol", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal",
        "$binary", "$uuid", "$code", "$scope", "$timestamp", "$regularExpression",
        "$dbPointer", "$date", "$minKey", "$maxKey", "$undefined",
    ]

    /// A top-level object: its keys are field names, never a wrapper.
    static func document(from members: [JSONValue.Member]) throws(ExtendedJSONError) -> BSONDocument {
        var document = BSONDocument()
        document.reserveCapacity(members.count)
        for member in members {
            guard !member.key.utf8.contains(0) else {
                throw ExtendedJSONError(
                    code: .nulInCString, path: [member.key],
                    message: "a key contains NUL, which BSON cannot store")
            }
            do {
                document.append(member.key, try value(from: member.value))
            } catch {
                throw error.inside(member.key)
            }
        }
        return document
    }

    static func value(from json: JSONValue) throws(ExtendedJSONError) -> BSON {
        switch json {
        case .string(let string): return .string(string)
        case .bool(let flag): return .bool(flag)
        case .null: return .null
        case .number(let lexeme): return try relaxedNumber(lexeme)
        case .array(let elements):
            var values: [BSON] = []
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                do {
                    values.append(try value(from: element))
                } catch {
                    throw error.inside(String(index))
                }
            }
            return .array(values)
        case .object(let members):
            if let wrapped = try wrapper(members) { return wrapped }
            return .document(try document(from: members))
        }
    }

    /// JSON numbers: integers become the smallest BSON integer that holds
    /// them (int32, then int64, else double); others become doubles.
    private static func relaxedNumber(_ lexeme: String) throws(ExtendedJSONError) -> BSON {
        let isInteger = !lexeme.utf8.contains { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }
        if isInteger {
            if let value = Int32(lexeme) { return .int32(value) }
            if let value = Int64(lexeme) { return .int64(value) }
        }
        guard let value = Double(lexeme) else {
            throw ExtendedJSONError(code: .invalidValue, message: "'\(lexeme)' is not a number")
        }
        return .double(value)
    }

    private static func invalid(_ message: String) -> ExtendedJSONError {
        ExtendedJSONError(code: .invalidWrapper, message: message)
    }

    private static func badValue(_ message: String) -> ExtendedJSONError {
        ExtendedJSONError(code: .invalidValue, message: message)
    }

    /// The BSON value of a type wrapper object, or nil if `members` is an
    /// ordinary document.
    private static func wrapper(_ members: [JSONValue.Member]) throws(ExtendedJSONError) -> BSON? {
        guard members.contains(where: { $0.key.utf8.first == UInt8(ascii: "$") }) else { return nil }
        func member(_ key: String) -> JSONValue? {
            members.first(where: { $0.key == key })?.value
        }

        // Legacy query-style regex: only when the values are strings, so a
        // `$regex` query operator holding a $regularExpression stays a document.
        if case .string(let pattern)? = member("$regex"),
            members.allSatisfy({ $0.key == "$regex" || $0.key == "$options" }), members.count <= 2
        {
            var options = ""
            if let optionsValue = member("$options") {
                guard case .string(let text) = optionsValue else { return nil }
                options = text
            }
            return try regex(pattern: pattern, options: options)
        }

        guard let special = members.first(where: { wrapperKeys.contains($0.key) }) else { return nil }
        let keys = Set(members.map(\.key))
        let count = members.count

        switch special.key {
        case "$code", "$scope":
            guard keys.contains("$code") else { throw invalid("$scope needs $code beside it") }
            guard case .string(let code)? = member("$code") else { throw invalid("$code needs a string") }
            if count == 1 { return .javascript(code) }
            guard count == 2, keys.contains("$scope") else {
                throw invalid("$code allows only $scope beside it")
            }
            guard case .object(let scopeMembers)? = member("$scope") else {
                throw invalid("$scope needs a document")
            }
            let scope: BSONDocument
            do {
                scope = try document(from: scopeMembers)
            } catch {
                throw error.inside("$scope")
            }
            return .javascriptWithScope(code: code, scope: scope)

        case "$binary":
            if count == 1, case .object(let fields) = special.value {
                return .binary(try canonicalBinary(fields))
            }
            if count == 2, keys.contains("$type"),
                case .string(let base64) = special.value, case .string(let type)? = member("$type")
            {
                return .binary(try binary(base64: base64, subType: type))
            }
            throw invalid("$binary needs {\"base64\": string, \"subType\": hex string}")

        default:
            break
        }

        guard count == 1 else {
            throw invalid("\(special.key) allows no other keys beside it")
        }
        let value = special.value
        switch special.key {
        case "$oid":
            guard case .string(let hex) = value else { throw invalid("$oid needs a string") }
            return .objectId(try objectId(hex))

        case "$symbol":
            guard case .string(let text) = value else { throw invalid("$symbol needs a string") }
            return .symbol(text)

        case "$numberInt":
            guard case .string(let text) = value else { throw invalid("$numberInt needs a string") }
            guard isIntegerText(text), let number = Int32(text) else {
                throw badValue("'\(text)' is not a 32-bit integer")
            }
            return .int32(number)

        case "$numberLong":
            guard case .string(let text) = value else { throw invalid("$numberLong needs a string") }
            return .int64(try int64(text))

        case "$numberDouble":
            guard case .string(let text) = value else { throw invalid("$numberDouble needs a string") }
            return .double(try double(text))

        case "$numberDecimal":
            guard case .string(let text) = value else { throw invalid("$numberDecimal needs a string") }
            do {
                return .decimal128(try Decimal128(parsing: text))
            } catch {
                throw badValue("$numberDecimal: \(error)")
            }

        case "$uuid":
            guard case .string(let text) = value else { throw invalid("$uuid needs a string") }
            return .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: try uuid(text)))

        case "$timestamp":
            guard case .object(let fields) = value else { throw invalid("$timestamp needs {\"t\": …, \"i\": …}") }
            let names = Set(fields.map(\.key))
            guard fields.count == 2, names == ["t", "i"] else {
                throw invalid("$timestamp needs exactly the keys \"t\" and \"i\"")
            }
            guard case .number(let t)? = fields.first(where: { $0.key == "t" })?.value,
                case .number(let i)? = fields.first(where: { $0.key == "i" })?.value
            else {
                throw invalid("$timestamp t and i need to be numbers")
            }
            guard let seconds = UInt32(t), let increment = UInt32(i) else {
                throw badValue("$timestamp t and i must be integers in 0...4294967295")
            }
            return .timestamp(BSONTimestamp(seconds: seconds, increment: increment))

        case "$regularExpression":
            guard case .object(let fields) = value, fields.count == 2,
                Set(fields.map(\.key)) == ["pattern", "options"]
            else {
                throw invalid("$regularExpression needs exactly {\"pattern\": string, \"options\": string}")
            }
            guard case .string(let pattern)? = fields.first(where: { $0.key == "pattern" })?.value,
                case .string(let options)? = fields.first(where: { $0.key == "options" })?.value
            else {
                throw invalid("$regularExpression pattern and options need to be strings")
            }
            return try regex(pattern: pattern, options: options)

        case "$dbPointer":
            guard case .object(let fields) = value, fields.count == 2,
                Set(fields.map(\.key)) == ["$ref", "$id"]
            else {
                throw invalid("$dbPointer needs exactly {\"$ref\": string, \"$id\": {\"$oid\": …}}")
            }
            guard case .string(let ref)? = fields.first(where: { $0.key == "$ref" })?.value else {
                throw invalid("$dbPointer $ref needs a string")
            }
            guard case .object(let idFields)? = fields.first(where: { $0.key == "$id" })?.value,
                idFields.count == 1, idFields[0].key == "$oid", case .string(let hex) = idFields[0].value
            else {
                throw invalid("$dbPointer $id needs {\"$oid\": string}")
            }
            return .dbPointer(ref: ref, id: try objectId(hex))

        case "$date":
            switch value {
            case .object(let fields):
                guard fields.count == 1, fields[0].key == "$numberLong", case .string(let text) = fields[0].value else {
                    throw invalid("$date needs {\"$numberLong\": string} or an ISO-8601 string")
                }
                return .datetime(try int64(text))
            case .string(let text):
                guard let milliseconds = ISODate.parse(text) else {
                    throw badValue("'\(text)' is not an RFC 3339 date-time such as 2012-12-24T12:15:30.501Z")
                }
                return .datetime(milliseconds)
            default:
                throw invalid("$date needs {\"$numberLong\": string} or an ISO-8601 string")
            }

        case "$minKey", "$maxKey":
            guard case .number("1") = value else { throw invalid("\(special.key) needs the number 1") }
            return special.key == "$minKey" ? .minKey : .maxKey

        case "$undefined":
            guard case .bool(true) = value else { throw invalid("$undefined needs true") }
            return .undefined

        default:
            throw invalid("unknown wrapper \(special.key)")
        }
    }

    private static func canonicalBinary(_ fields: [JSONValue.Member]) throws(ExtendedJSONError) -> BSONBinary {
        guard fields.count == 2, Set(fields.map(\.key)) == ["base64", "subType"] else {
            throw invalid("$binary needs exactly {\"base64\": string, \"subType\": hex string}")
        }
        guard case .string(let base64)? = fields.first(where: { $0.key == "base64" })?.value,
            case .string(let subType)? = fields.first(where: { $0.key == "subType" })?.value
        else {
            throw invalid("$binary base64 and subType need to be strings")
        }
        return try binary(base64: base64, subType: subType)
    }

    private static func binary(base64: String, subType: String) throws(ExtendedJSONError) -> BSONBinary {
        guard (1...2).contains(subType.utf8.count), let subtype = UInt8(subType, radix: 16) else {
            throw badValue("$binary subType '\(subType)' is not one or two hex digits")
        }
        guard let bytes = Base64.decode(base64) else {
            throw badValue("$binary base64 is not padded base64")
        }
        return BSONBinary(subtype: subtype, bytes: bytes)
    }

    private static func regex(pattern: String, options: String) throws(ExtendedJSONError) -> BSON {
        guard !pattern.utf8.contains(0), !options.utf8.contains(0) else {
            throw ExtendedJSONError(
                code: .nulInCString,
                message: "a regular expression contains NUL, which BSON cannot store")
        }
        // BSON stores options sorted.
        return .regex(pattern: pattern, options: String(options.sorted()))
    }

    private static func objectId(_ hex: String) throws(ExtendedJSONError) -> ObjectId {
        do {
            return try ObjectId(hex: hex)
        } catch {
            throw badValue(error.description)
        }
    }

    private static func isIntegerText(_ text: String) -> Bool {
        var bytes = text.utf8[...]
        if bytes.first == UInt8(ascii: "-") { bytes = bytes.dropFirst() }
        return !bytes.isEmpty && bytes.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    private static func int64(_ text: String) throws(ExtendedJSONError) -> Int64 {
        guard isIntegerText(text), let number = Int64(text) else {
            throw badValue("'\(text)' is not a 64-bit integer")
        }
        return number
    }

    /// `Infinity`, `-Infinity`, `NaN`, or decimal digits with an optional
    /// sign, point and exponent (not Swift's hex floats or "inf").
    private static func double(_ text: String) throws(ExtendedJSONError) -> Double {
        switch text {
        case "Infinity": return .infinity
        case "-Infinity": return -.infinity
        case "NaN": return .nan
        default: break
        }
        var digits = 0
        var valid = true
        var index = text.utf8.startIndex
        let utf8 = text.utf8
        if index < utf8.endIndex, utf8[index] == UInt8(ascii: "-") { index = utf8.index(after: index) }
        var sawPoint = false
        while index < utf8.endIndex {
            let byte = utf8[index]
            if byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") {
                digits += 1
            } else if byte == UInt8(ascii: "."), !sawPoint {
                sawPoint = true
            } else {
                break
            }
            index = utf8.index(after: index)
        }
        if index < utf8.endIndex {
            if utf8[index] | 0x20 == UInt8(ascii: "e") {
                index = utf8.index(after: index)
                if index < utf8.endIndex, utf8[index] == UInt8(ascii: "+") || utf8[index] == UInt8(ascii: "-") {
                    index = utf8.index(after: index)
                }
                var exponentDigits = 0
                while index < utf8.endIndex, utf8[index] >= UInt8(ascii: "0") && utf8[index] <= UInt8(ascii: "9") {
                    exponentDigits += 1
                    index = utf8.index(after: index)
                }
                valid = exponentDigits > 0
            }
        }
        guard valid, digits > 0, index == utf8.endIndex, let value = Double(text) else {
            throw badValue("'\(text)' is not a double (digits, 'Infinity', '-Infinity' or 'NaN')")
        }
        return value
    }

    /// `8-4-4-4-12` hex digits (or 32 without hyphens), as 16 bytes.
    private static func uuid(_ text: String) throws(ExtendedJSONError) -> [UInt8] {
        let utf8 = Array(text.utf8)
        let hyphens = [8, 13, 18, 23]
        var hex: [UInt8] = []
        if utf8.count == 36 {
            for (index, byte) in utf8.enumerated() {
                if hyphens.contains(index) {
                    guard byte == UInt8(ascii: "-") else { throw badValue("'\(text)' is not a UUID") }
                } else {
                    hex.append(byte)
                }
            }
        } else if utf8.count == 32 {
            hex = utf8
        } else {
            throw badValue("'\(text)' is not a UUID (8-4-4-4-12 hex digits)")
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        var index = 0
        while index < 32 {
            guard let high = nibble(hex[index]), let low = nibble(hex[index + 1]) else {
                throw badValue("'\(text)' is not a UUID (8-4-4-4-12 hex digits)")
            }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    private static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}

extension ExtendedJSONError {
    /// The same error, one level further out: `key` is prepended to the path.
    func inside(_ key: String) -> ExtendedJSONError {
        var copy = self
        copy.path.insert(key, at: 0)
        return copy
    }
}

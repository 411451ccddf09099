/// Reads one JSON object of the configuration strictly: every key must be
/// consumed (unknown keys are errors), required fields are named when
/// missing, and every error carries the field path.
package struct ConfigReader {
    package let path: String
    private let members: [(key: String, value: JSONValue)]
    private var consumed = Set<String>()

    /// Wraps `value`, which must be an object.
    package init(_ value: JSONValue, path: String) throws(ConfigError) {
        guard case .object(let members) = value else {
            throw ConfigError(.wrongType, path: path, "expected an object, found \(value.kindDescription)")
        }
        self.path = path
        self.members = members.map { ($0.key, $0.value) }
    }

    /// The path of a member, for nested readers and errors.
    package func path(_ key: String) -> String {
        let simple = key.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
        if path.isEmpty { return simple ? key : "[\"\(key)\"]" }
        return simple ? "\(path).\(key)" : "\(path)[\"\(key)\"]"
    }

    /// All keys of the object, in document order (marks them consumed).
    package mutating func allMembers() -> [(key: String, value: JSONValue)] {
        for member in members { consumed.insert(member.key) }
        return members
    }

    /// The raw value of `key`, or `nil` if absent (JSON null counts as absent).
    package mutating func value(_ key: String) -> JSONValue? {
        consumed.insert(key)
        guard let found = members.first(where: { $0.key == key })?.value else { return nil }
        if case .null = found { return nil }
        return found
    }

    /// The raw value of `key`; a missing field is an error.
    package mutating func required(_ key: String) throws(ConfigError) -> JSONValue {
        guard let found = value(key) else {
            throw ConfigError(.missingField, path: path(key), "required field is missing")
        }
        return found
    }

    package mutating func string(_ key: String) throws(ConfigError) -> String? {
        guard let found = value(key) else { return nil }
        guard let text = found.stringValue else {
            throw ConfigError(.wrongType, path: path(key), "expected a string, found \(found.kindDescription)")
        }
        return text
    }

    package mutating func requiredString(_ key: String) throws(ConfigError) -> String {
        guard let text = try string(key) else {
            throw ConfigError(.missingField, path: path(key), "required field is missing")
        }
        return text
    }

    package mutating func bool(_ key: String) throws(ConfigError) -> Bool? {
        guard let found = value(key) else { return nil }
        guard let flag = found.boolValue else {
            throw ConfigError(.wrongType, path: path(key), "expected true or false, found \(found.kindDescription)")
        }
        return flag
    }

    /// An integer in `range`.
    package mutating func integer(_ key: String, in range: ClosedRange<Int64>) throws(ConfigError) -> Int64? {
        guard let found = value(key) else { return nil }
        guard let number = found.integerValue else {
            throw ConfigError(.wrongType, path: path(key), "expected an integer, found \(found.kindDescription)")
        }
        guard range.contains(number) else {
            throw ConfigError(
                .invalidValue, path: path(key),
                "\(number) is out of range; use \(range.lowerBound)...\(range.upperBound)")
        }
        return number
    }

    /// A positive, finite number of seconds (at most a day).
    package mutating func seconds(_ key: String) throws(ConfigError) -> Double? {
        guard let found = value(key) else { return nil }
        guard let number = found.doubleValue else {
            throw ConfigError(.wrongType, path: path(key), "expected a number of seconds, found \(found.kindDescription)")
        }
        guard number > 0, number <= 86_400 else {
            throw ConfigError(.invalidValue, path: path(key), "\(number) is out of range; use more than 0 and at most 86400")
        }
        return number
    }

    package mutating func array(_ key: String) throws(ConfigError) -> [JSONValue]? {
        guard let found = value(key) else { return nil }
        guard case .array(let items) = found else {
            throw ConfigError(.wrongType, path: path(key), "expected an array, found \(found.kindDescription)")
        }
        return items
    }

    /// A nested object reader for `key`, or `nil` if absent.
    package mutating func object(_ key: String) throws(ConfigError) -> ConfigReader? {
        guard let found = value(key) else { return nil }
        return try ConfigReader(found, path: path(key))
    }

    /// Fails on the first key that no accessor asked for.
    package func finish() throws(ConfigError) {
        for member in members where !consumed.contains(member.key) {
            let accepted =
                consumed.isEmpty
                ? "this object takes no keys" : "the keys accepted here are: \(consumed.sorted().joined(separator: ", "))"
            throw ConfigError(.unknownKey, path: path(member.key), "unknown key; \(accepted)")
        }
    }
}

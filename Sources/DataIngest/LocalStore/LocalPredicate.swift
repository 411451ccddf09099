import Foundation
import IngestCore

/// A filter for the objects of one class, parsed from a predicate string in
/// the style of the seed SDK's `filter(_:_:)` (a subset of NSPredicate
/// syntax). Values are bound as SQL parameters, never spliced into SQL;
/// property names are checked against the class's schema.
///
/// ```swift
/// let predicate = try LocalPredicate("name == %@ AND count > %@", "x", 3)
/// let busy = try LocalPredicate("NOT (title BEGINSWITH[c] 'draft') OR priority IN {1, 2}")
/// ```
///
/// The grammar (keywords are case-insensitive):
///
///     predicate  := or
///     or         := and (("OR" | "||") and)*
///     and        := not (("AND" | "&&") not)*
///     not        := ("NOT" | "!") not | "(" predicate ")" | "TRUEPREDICATE" | "FALSEPREDICATE" | comparison
///     comparison := keyPath operator modifier? value
///     keyPath    := a property name | %K (the argument names the property)
///     operator   := == | = | != | <> | < | <= | =< | > | >= | => | BEGINSWITH | ENDSWITH | CONTAINS | LIKE | IN
///     modifier   := [c]   (case-insensitive, ASCII letters only; string operators and ==, !=)
///     value      := %@ | 'text' | "text" | number | true | false | YES | NO | nil | NULL | { value, … } (after IN)
///
/// `LIKE` takes `*` (any run of characters) and `?` (one character) as
/// wildcards. `IN` takes a `{…}` list or a `%@` array argument.
public struct LocalPredicate: Sendable, Hashable, CustomStringConvertible {
    let node: PredicateNode
    /// The predicate string it was parsed from (or built from).
    public let format: String

    /// Parses `format`, taking `%@` and `%K` arguments from `arguments` in
    /// order. Arguments may be `String`, `Bool`, any integer, `Float`,
    /// `Double`, `Date`, `Data`, `ObjectId`, `UUID`, `Decimal128`, `BSON`,
    /// `nil`, or an array of these for `IN`.
    public init(format: String, arguments: [Any]) throws(LocalStoreError) {
        var parser = try PredicateParser(format: format, arguments: arguments)
        node = try parser.parse()
        self.format = format
    }

    /// Parses `format` with variadic arguments.
    public init(_ format: String, _ arguments: Any...) throws(LocalStoreError) {
        try self.init(format: format, arguments: arguments)
    }

    init(node: PredicateNode, format: String) {
        self.node = node
        self.format = format
    }

    /// Both predicates.
    public static func && (lhs: LocalPredicate, rhs: LocalPredicate) -> LocalPredicate {
        LocalPredicate(node: .and(lhs.node, rhs.node), format: "(\(lhs.format)) AND (\(rhs.format))")
    }

    /// Either predicate.
    public static func || (lhs: LocalPredicate, rhs: LocalPredicate) -> LocalPredicate {
        LocalPredicate(node: .or(lhs.node, rhs.node), format: "(\(lhs.format)) OR (\(rhs.format))")
    }

    /// The opposite predicate.
    public static prefix func ! (operand: LocalPredicate) -> LocalPredicate {
        LocalPredicate(node: .not(operand.node), format: "NOT (\(operand.format))")
    }

    public var description: String { format }
}

/// The parsed form of a predicate.
indirect enum PredicateNode: Sendable, Hashable {
    enum Operator: String, Sendable, Hashable {
        case equal = "=="
        case notEqual = "!="
        case less = "<"
        case lessOrEqual = "<="
        case greater = ">"
        case greaterOrEqual = ">="
        case beginsWith = "BEGINSWITH"
        case endsWith = "ENDSWITH"
        case contains = "CONTAINS"
        case like = "LIKE"
        case `in` = "IN"

        var isStringOperator: Bool {
            switch self {
            case .beginsWith, .endsWith, .contains, .like: return true
            default: return false
            }
        }

        var isOrdering: Bool {
            switch self {
            case .less, .lessOrEqual, .greater, .greaterOrEqual: return true
            default: return false
            }
        }
    }

    case constant(Bool)
    case comparison(keyPath: String, op: Operator, caseInsensitive: Bool, value: BSON)
    case and(PredicateNode, PredicateNode)
    case or(PredicateNode, PredicateNode)
    case not(PredicateNode)
}

extension BSON {
    /// A predicate argument or create value as BSON, in the forms the
    /// client stores (`nil` when the type has no stored form).
    static func localArgument(_ value: Any) -> BSON? {
        guard let value = unwrapped(value) else { return .null }
        switch value {
        case let bson as BSON: return bson
        case let flag as Bool: return .bool(flag)
        case let text as String: return .string(text)
        case let text as Substring: return .string(String(text))
        case let number as Double: return .double(number)
        case let number as Float: return .double(Double(number))
        case let date as Date: return .datetime(Int64((date.timeIntervalSince1970 * 1000).rounded(.down)))
        case let data as Data: return .binary(BSONBinary(subtype: BSONBinary.Subtype.generic, bytes: Array(data)))
        case let id as ObjectId: return .objectId(id)
        case let uuid as UUID:
            return .binary(BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: withUnsafeBytes(of: uuid.uuid) { Array($0) }))
        case let decimal as Decimal128: return .decimal128(decimal)
        case let array as [Any]:
            var elements: [BSON] = []
            for element in array {
                guard let converted = localArgument(element) else { return nil }
                elements.append(converted)
            }
            return .array(elements)
        default:
            return integerValue(value, in: Int64.min...Int64.max).map { .int64($0) }
        }
    }
}

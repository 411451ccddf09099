import IngestCore
import IngestSupport

/// A piece of SQL and the values bound to its `?` parameters, in order.
struct SQLFragment {
    var sql: String
    var values: [SQLiteValue]
}

extension TableMapping {
    /// The `WHERE` condition of `node`. Property names are resolved against
    /// this class's columns (and quoted from the schema, never from the
    /// predicate); every value becomes a bound parameter.
    func condition(_ node: PredicateNode) throws(LocalStoreError) -> SQLFragment {
        switch node {
        case .constant(let flag):
            return SQLFragment(sql: flag ? "1" : "0", values: [])
        case .and(let lhs, let rhs):
            let left = try condition(lhs), right = try condition(rhs)
            return SQLFragment(sql: "(\(left.sql) AND \(right.sql))", values: left.values + right.values)
        case .or(let lhs, let rhs):
            let left = try condition(lhs), right = try condition(rhs)
            return SQLFragment(sql: "(\(left.sql) OR \(right.sql))", values: left.values + right.values)
        case .not(let inner):
            // A comparison with NULL is NULL, and NOT NULL is NULL (false):
            // ifnull makes NOT (x == 5) true for objects whose x is nil.
            let fragment = try condition(inner)
            return SQLFragment(sql: "(NOT ifnull(\(fragment.sql), 0))", values: fragment.values)
        case .comparison(let keyPath, let op, let caseInsensitive, let value):
            return try comparison(keyPath: keyPath, op: op, caseInsensitive: caseInsensitive, value: value)
        }
    }

    /// The column a predicate or sort names, if it can be used there.
    func queryableColumn(_ keyPath: String, for use: String) throws(LocalStoreError) -> Column {
        guard let column = column(named: keyPath) else {
            if keyPath.contains("."), let first = keyPath.split(separator: ".").first, column(named: String(first)) != nil {
                throw LocalStoreError(
                    .invalidProperty, className: className, propertyName: keyPath,
                    message:
                        "\(className): '\(keyPath)' looks into an embedded object or link; \(use) works on the class's own scalar properties only"
                )
            }
            throw LocalStoreError(
                .invalidProperty, className: className, propertyName: keyPath,
                message:
                    "\(className) has no property '\(keyPath)' to use in \(use); its properties are \(columns.map(\.property.name).joined(separator: ", "))"
            )
        }
        guard column.storage.isQueryable else {
            throw LocalStoreError(
                .invalidProperty, className: className, propertyName: keyPath,
                message:
                    "\(className).\(keyPath) has type \(column.property.typeDescription), stored as BSON, and cannot be used in \(use); use the class's scalar properties"
            )
        }
        return column
    }

    private func comparison(keyPath: String, op: PredicateNode.Operator, caseInsensitive: Bool, value: BSON) throws(LocalStoreError)
        -> SQLFragment
    {
        let column = try queryableColumn(keyPath, for: "a predicate")
        let name = column.quotedName
        let path = "\(className).\(keyPath)"

        if op == .in {
            guard case .array(let elements) = value else {
                throw LocalStoreError(
                    .invalidPredicate, className: className, propertyName: keyPath, message: "\(path) IN needs a list of values")
            }
            var values: [SQLiteValue] = []
            var matchesNull = false
            for element in elements {
                if case .null = element { matchesNull = true; continue }
                values.append(try bind(element, to: column, path: path))
            }
            var parts: [String] = []
            if !values.isEmpty { parts.append("\(name) IN (\(Array(repeating: "?", count: values.count).joined(separator: ", ")))") }
            if matchesNull { parts.append("\(name) IS NULL") }
            return SQLFragment(sql: parts.isEmpty ? "0" : "(\(parts.joined(separator: " OR ")))", values: values)
        }

        if case .null = value {
            switch op {
            case .equal: return SQLFragment(sql: "\(name) IS NULL", values: [])
            case .notEqual: return SQLFragment(sql: "\(name) IS NOT NULL", values: [])
            default:
                throw LocalStoreError(
                    .invalidPredicate, className: className, propertyName: keyPath,
                    message: "\(path) \(op.rawValue) nil: nil can only be compared with == or !=")
            }
        }

        let bound = try bind(value, to: column, path: path)
        if op.isStringOperator || caseInsensitive {
            guard column.storage == .text else {
                throw LocalStoreError(
                    .invalidPredicate, className: className, propertyName: keyPath,
                    message:
                        "\(path) has type \(column.property.typeDescription): \(op.rawValue)\(caseInsensitive ? "[c]" : "") applies to String properties only"
                )
            }
        }
        if op.isOrdering && !column.storage.isOrdered {
            throw LocalStoreError(
                .invalidPredicate, className: className, propertyName: keyPath,
                message: "\(path) has type \(column.property.typeDescription): only ==, != and IN apply to it, not \(op.rawValue)")
        }
        let subject = caseInsensitive ? "lower(\(name))" : name
        let parameter = caseInsensitive ? "lower(?)" : "?"
        switch op {
        case .equal: return SQLFragment(sql: "\(subject) = \(parameter)", values: [bound])
        case .notEqual: return SQLFragment(sql: "\(subject) IS NOT \(parameter)", values: [bound])
        case .less: return SQLFragment(sql: "\(name) < ?", values: [bound])
        case .lessOrEqual: return SQLFragment(sql: "\(name) <= ?", values: [bound])
        case .greater: return SQLFragment(sql: "\(name) > ?", values: [bound])
        case .greaterOrEqual: return SQLFragment(sql: "\(name) >= ?", values: [bound])
        case .contains:
            return SQLFragment(sql: "instr(\(subject), \(parameter)) > 0", values: [bound])
        case .beginsWith:
            return SQLFragment(sql: "substr(\(subject), 1, length(?)) = \(parameter)", values: [bound, bound])
        case .endsWith:
            return SQLFragment(sql: "(length(?) = 0 OR substr(\(subject), -length(?)) = \(parameter))", values: [bound, bound, bound])
        case .like:
            // LIKE's * and ? are GLOB's; '[' starts a GLOB class, so it is escaped.
            guard case .text(let pattern) = bound else {
                throw LocalStoreError(
                    .invalidPredicate, className: className, propertyName: keyPath, message: "\(path) LIKE needs a string pattern")
            }
            return SQLFragment(sql: "\(subject) GLOB \(parameter)", values: [.text(pattern.replacingOccurrences(of: "[", with: "[[]"))])
        case .in:
            throw LocalStoreError(
                .invalidPredicate, className: className, propertyName: keyPath, message: "\(path) IN needs a list of values")
        }
    }

    /// The SQL value of a predicate value for `column`, with the numeric
    /// conversions a comparison allows (an integer for a Double property, a
    /// Double for an Int property).
    func bind(_ value: BSON, to column: Column, path: String) throws(LocalStoreError) -> SQLiteValue {
        var storage = column.storage
        if case .link(let key) = storage { storage = key }
        switch (storage, value) {
        case (.real, .int64(let number)): return .real(Double(number))
        case (.real, .int32(let number)): return .real(Double(number))
        case (.int, .double(let number)): return .real(number)
        case (.decimal128, .int64(let number)): return .text(Decimal128(number).description)
        default:
            if let converted = storage.sqlValue(value) { return converted }
        }
        throw LocalStoreError(
            .invalidPredicate, className: className, propertyName: column.property.name,
            message:
                "\(path) has type \(column.property.typeDescription) but the predicate compares it with a \(value.localTypeName); pass a value of the property's type"
        )
    }
}

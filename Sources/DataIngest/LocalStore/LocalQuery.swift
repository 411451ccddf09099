import IngestCore

/// What to read from a ``LocalStore``: the objects of one class, optionally
/// filtered, sorted and limited.
///
/// ```swift
/// let query = try LocalQuery("Task")
///     .filter("done == false AND priority >= %@", 2)
///     .sorted(by: "priority", ascending: false)
///     .limit(10)
/// let rows = try store.read { try $0.objects(query) }
/// ```
///
/// Without a sort, objects come in insertion (rowid) order; sorted objects
/// with equal keys keep that order too.
public struct LocalQuery: Sendable, Hashable {
    /// One sort key.
    public struct Sort: Sendable, Hashable {
        /// The property name.
        public var keyPath: String
        /// Ascending (nil first) or descending.
        public var ascending: Bool

        /// Creates a sort key.
        public init(keyPath: String, ascending: Bool = true) {
            self.keyPath = keyPath
            self.ascending = ascending
        }
    }

    /// The class whose objects are read.
    public var className: String
    /// The filter; `nil` reads every object.
    public var predicate: LocalPredicate?
    /// Sort keys, most significant first.
    public var sort: [Sort]
    /// At most this many objects; `nil` for no limit.
    public var limit: Int?

    /// A query for every object of `className`.
    public init(_ className: String, predicate: LocalPredicate? = nil, sort: [Sort] = [], limit: Int? = nil) {
        self.className = className
        self.predicate = predicate
        self.sort = sort
        self.limit = limit
    }

    /// This query with `predicate` added (both must hold).
    public func filter(_ predicate: LocalPredicate) -> LocalQuery {
        var copy = self
        copy.predicate = self.predicate.map { $0 && predicate } ?? predicate
        return copy
    }

    /// This query with a parsed predicate added; see ``LocalPredicate``.
    public func filter(_ format: String, _ arguments: Any...) throws(LocalStoreError) -> LocalQuery {
        filter(try LocalPredicate(format: format, arguments: arguments))
    }

    /// This query sorted by `keyPath`, after the existing sort keys.
    public func sorted(by keyPath: String, ascending: Bool = true) -> LocalQuery {
        var copy = self
        copy.sort.append(Sort(keyPath: keyPath, ascending: ascending))
        return copy
    }

    /// This query returning at most `count` objects.
    public func limit(_ count: Int) -> LocalQuery {
        var copy = self
        copy.limit = max(0, count)
        return copy
    }
}

extension TableMapping {
    /// `WHERE …` (or nothing) for `query`.
    func whereClause(_ query: LocalQuery) throws(LocalStoreError) -> SQLFragment {
        guard let predicate = query.predicate else { return SQLFragment(sql: "", values: []) }
        let condition = try condition(predicate.node)
        return SQLFragment(sql: " WHERE \(condition.sql)", values: condition.values)
    }

    /// The full `SELECT` for `query`.
    func selectSQL(_ query: LocalQuery) throws(LocalStoreError) -> SQLFragment {
        var fragment = try whereClause(query)
        var order: [String] = []
        for key in query.sort {
            let column = try queryableColumn(key.keyPath, for: "sorting")
            order.append("\(column.quotedName) \(key.ascending ? "ASC" : "DESC")")
        }
        order.append("rowid ASC")
        fragment.sql = "SELECT \(selectList) FROM \(quotedTable)\(fragment.sql) ORDER BY \(order.joined(separator: ", "))"
        if let limit = query.limit {
            fragment.sql += " LIMIT ?"
            fragment.values.append(.integer(Int64(limit)))
        }
        return fragment
    }
}

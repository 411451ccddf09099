import IngestCore

/// The objects of one type in a local realm, as a query that is evaluated
/// when read: in SQL, by the realm's SQLite store. Filtering and sorting
/// return new results; `fetch()`, `count`, `first` and `isEmpty` read.
///
/// ```swift
/// let results = try realm.objects(Task.self)
///     .filter("done == false AND priority >= %@", 2)
///     .sorted(byKeyPath: "priority", ascending: false)
/// let count = try results.count
/// for task in try results.fetch() { print(task.title) }
/// ```
///
/// The objects read are managed: inside a later `write {}` their changes
/// are saved. Reading inside a write transaction sees its changes.
public struct Results<Element: Object> {
    let realm: Realm
    let query: LocalQuery

    /// These results narrowed by a predicate (see ``LocalPredicate`` for the
    /// syntax); `%@` arguments may also be `Object`s (compared by primary
    /// key, for link properties). Throws ``RealmError/Code/invalidQuery``
    /// for a predicate that cannot be parsed.
    public func filter(_ predicateFormat: String, _ arguments: Any...) throws(RealmError) -> Results<Element> {
        do throws(LocalStoreError) {
            let predicate = try LocalPredicate(format: predicateFormat, arguments: realm.localArguments(arguments))
            return Results(realm: realm, query: query.filter(predicate))
        } catch {
            throw RealmError(local: error)
        }
    }

    /// These results sorted by a property, after any earlier sort keys.
    /// The property is checked when the results are read.
    public func sorted(byKeyPath keyPath: String, ascending: Bool = true) -> Results<Element> {
        Results(realm: realm, query: query.sorted(by: keyPath, ascending: ascending))
    }

    /// At most the first `maxLength` of these results.
    public func prefix(_ maxLength: Int) -> Results<Element> {
        Results(realm: realm, query: query.limit(maxLength))
    }

    /// Reads the objects, managed, in order.
    public func fetch() throws(RealmError) -> [Element] {
        let (local, typeSchema) = try realm.localContext(for: Element.self)
        return try local.withReadAccess { access throws(RealmError) -> [Element] in
            let rows: [LocalStoreRow]
            do throws(LocalStoreError) {
                rows = try access.objects(query)
            } catch {
                throw RealmError(local: error)
            }
            let context = LocalDecodingContext(realm: realm, access: access, local: local)
            var objects: [Element] = []
            objects.reserveCapacity(rows.count)
            for row in rows {
                if let object = try context.object(row, typeSchema) as? Element { objects.append(object) }
            }
            return objects
        }
    }

    /// How many objects these results hold (counted by SQLite).
    public var count: Int {
        get throws(RealmError) {
            let (local, _) = try realm.localContext(for: Element.self)
            return try local.withReadAccess { access throws(RealmError) -> Int in
                do throws(LocalStoreError) {
                    return try access.count(query)
                } catch {
                    throw RealmError(local: error)
                }
            }
        }
    }

    /// Whether these results hold no object.
    public var isEmpty: Bool {
        get throws(RealmError) { try count == 0 }
    }

    /// The first object, or nil.
    public var first: Element? {
        get throws(RealmError) { try prefix(1).fetch().first }
    }
}

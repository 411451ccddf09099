extension Realm {
    /// As RealmSwift's `invalidate()`: the objects this realm manages stop
    /// being managed. They keep the values they have; changing them inside a
    /// later `write {}` no longer saves anything (read them again to change
    /// the stored objects). An open write transaction is cancelled first,
    /// as RealmSwift does (its changes are rolled back).
    ///
    /// Differs from RealmSwift in one way: there, reading an invalidated
    /// object raises an exception; here it reads the values it had. A local
    /// realm reads each query afresh from SQLite, so there is no read
    /// snapshot to release; synced realms hold nothing readable.
    ///
    /// ```swift
    /// let settings = try realm.object(ofType: Settings.self, forPrimaryKey: "main")
    /// realm.invalidate()   // `settings` is now unmanaged
    /// ```
    public func invalidate() {
        if isInWriteTransaction { cancelWrite() }
        localStore?.forgetManagedObjects()
    }
}

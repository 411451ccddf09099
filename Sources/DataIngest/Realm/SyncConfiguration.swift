import IngestCore

/// What makes a ``Realm/Configuration`` synced. A synced realm holds only
/// ``AsymmetricObject`` types (upload-only, Data Ingest): their committed
/// transactions go to ``transactionSink`` (the segment store), which the
/// sync session uploads. No subscription and no download are needed, so a
/// synced realm opens at once.
///
/// `user.flexibleSyncConfiguration()` builds one; tests build it directly:
///
/// ```swift
/// var config = Realm.Configuration(syncConfiguration: SyncConfiguration(identifier: "sensors", transactionSink: store))
/// config.objectTypes = [WeatherSensor.self]
/// ```
public struct SyncConfiguration: Sendable {
    /// Names this synced realm (its default file is `<identifier>.realm`);
    /// the sync layer uses the app and user ids.
    public var identifier: String
    /// Data Ingest is a feature of flexible sync; partition-based sync is
    /// not supported and a configuration with `false` fails to open.
    /// Default: `true`.
    public var isFlexibleSync: Bool
    /// Where committed transactions go. Opening fails without one.
    /// Default: `nil` (the sync layer sets the segment store).
    public var transactionSink: (any TransactionSink)? {
        get { target?.sink }
        set { target = newValue.map { .custom($0) } }
    }

    /// What the realm commits to: the user's segment store
    /// (`user.flexibleSyncConfiguration()` sets it), or a sink set on
    /// ``transactionSink``.
    var target: SyncTarget?

    /// Creates a sync configuration.
    public init(identifier: String, isFlexibleSync: Bool = true, transactionSink: (any TransactionSink)? = nil) {
        self.identifier = identifier
        self.isFlexibleSync = isFlexibleSync
        self.target = transactionSink.map { .custom($0) }
    }

    /// The configuration of a user's synced realm: commits go to the
    /// session's segment store.
    init(identifier: String, session sink: SessionTransactionSink) {
        self.identifier = identifier
        self.isFlexibleSync = true
        self.target = .session(sink)
    }
}

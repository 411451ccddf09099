/// Where an app's accepted objects are written.
///
/// ```json
/// "sink": { "kind": "sqlite", "path": "weather.sqlite" }
/// "sink": { "kind": "postgres", "connection": "postgresql://ingest@127.0.0.1/weather" }
/// "sink": { "kind": "clickhouse", "url": "http://127.0.0.1:8123", "database": "weather" }
/// "sink": { "kind": "clickhouse", "url": "http://127.0.0.1:8123", "database": "weather",
///           "cluster": { "name": "two_shards", "shards": [ { "url": "http://10.0.0.1:8123", "database": "weather_local" },
///                                                         { "url": "http://10.0.0.2:8123", "database": "weather_local" } ] } }
/// ```
package enum SinkConfiguration: Sendable, Hashable {
    /// An embedded SQLite database file. A relative path is resolved against
    /// the server's state directory.
    case sqlite(path: String)
    /// A PostgreSQL database, by libpq connection string or URI.
    case postgres(connection: String)
    /// A ClickHouse server over its HTTP interface; with `cluster`, writes
    /// go through `Distributed` tables over its shards (see Docs/Deployment.md).
    case clickhouse(url: String, database: String, cluster: ClickHouseSink.Cluster? = nil)

    /// `sqlite`, `postgres` or `clickhouse`.
    package var kind: String {
        switch self {
        case .sqlite: "sqlite"
        case .postgres: "postgres"
        case .clickhouse: "clickhouse"
        }
    }
}

import Foundation
import IngestCore
import Testing
@testable import IngestServer
import IngestTestSupport

/// The throwaway ClickHouse that Scripts/test.sh starts
/// (Scripts/services/clickhouse.sh): its URL, or nil when the variable is
/// absent (the tests that need it are then skipped with that reason).
enum ClickHouseTestService {
    static var url: String? { ProcessInfo.processInfo.environment["INGEST_TEST_CLICKHOUSE_URL"] }
    /// The two-shard cluster of the service's config (shard databases ingest_shard1, ingest_shard2).
    static var cluster: String? { ProcessInfo.processInfo.environment["INGEST_TEST_CLICKHOUSE_CLUSTER"] }
    static var isAvailable: Bool { url != nil }
    static let skipReason: Comment = "INGEST_TEST_CLICKHOUSE_URL is not set: run Scripts/test.sh, which starts ClickHouse"
}

/// A database of its own on the test ClickHouse, dropped on release.
final class ClickHouseTestDatabase {
    let name: String
    let url: String
    let client: ClickHouseClient

    init() throws {
        guard let url = ClickHouseTestService.url else { throw TestSupportError("\(ClickHouseTestService.skipReason)") }
        self.url = url
        name = "ingest_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        client = try ClickHouseClient(url: url)
    }

    deinit {
        _ = try? client.execute("DROP DATABASE IF EXISTS \(name)")
        client.closeIdle()
    }

    /// The answer of `sql` as lines of tab-separated fields.
    func rows(_ sql: String) throws -> [[String]] {
        try client.query(sql).split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
    }

    /// `uploadTestConfig` with the `shop` app's sink in this database (and,
    /// with `cluster`, Distributed tables over the service's two shards).
    func serverConfig(cluster: Bool = false) -> String {
        var sink = #""kind": "clickhouse", "url": "\#(url)", "database": "\#(name)""#
        if cluster, let name = ClickHouseTestService.cluster {
            sink +=
                #", "cluster": { "name": "\#(name)", "shards": ["#
                + #"{ "url": "\#(url)", "database": "ingest_shard1" }, { "url": "\#(url)", "database": "ingest_shard2" }] }"#
        }
        return uploadTestConfig.replacingOccurrences(
            of: #""auth": { "anon-user": {}, "local-userpass": {}, "api-key": {} },"#,
            with: #""auth": { "anon-user": {}, "local-userpass": {}, "api-key": {} }, "sink": { \#(sink) },"#)
    }
}

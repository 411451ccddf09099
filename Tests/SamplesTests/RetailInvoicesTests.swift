#if canImport(Glibc)
import Glibc
#endif
import Foundation
import IngestServer
import IngestSupport
import IngestTestSupport
import Testing

/// The RetailInvoices binary against a real ingest-server: invoices land
/// once, chained per till; crashes of the sample (at each step of an
/// invoice, and `kill -9` from outside) and of the server leave every chain
/// intact; each kind of change to the database is found and located;
/// `export` writes the same bytes every time, from SQLite and PostgreSQL.
@Suite struct RetailInvoicesTests {
    /// The sample with one data directory against one server.
    struct Retail {
        let server: SampleServer
        let directory: String
        let data: String
        let binary: String

        init(_ server: SampleServer, in directory: String, data: String = "retail") throws {
            self.server = server
            self.directory = directory
            self.data = directory + "/" + data
            binary = try builtExecutable("RetailInvoices")
        }

        func run(_ arguments: [String], environment: [String: String] = [:]) throws -> ProcessResult {
            try runProcess(
                binary, ["run", "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", data] + arguments,
                in: directory, environment: environment)
        }

        /// `verify` against `database` (the server's SQLite file by default) with the tills' journals in `dataDirectory`.
        func verify(_ database: [String]? = nil, dataDirectory: String? = nil) throws -> ProcessResult {
            try runProcess(
                binary, ["verify"] + (database ?? ["--database", server.databasePath]) + ["--data-dir", dataDirectory ?? data],
                in: directory)
        }

        func export(_ arguments: [String]) throws -> ProcessResult {
            try runProcess(binary, ["export"] + arguments, in: directory)
        }

        /// What the journal of `till` in S01 says it issued (0 when it is absent or being replaced).
        func issued(_ till: String, store: String = "S01") -> Int {
            let path = data + "/tills/\(store)-\(till).json"
            guard let bytes = FileManager.default.contents(atPath: path),
                let json = try? JSONSerialization.jsonObject(with: bytes) as? [String: Any]
            else { return 0 }
            return json["issued"] as? Int ?? 0
        }
    }

    static let genesis = String(repeating: "0", count: 64)

    @Test func invoicesLandOnceChainedPerTillAndVerifyMatchesToTheCent() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let retail = try Retail(server, in: directory.path)
        let run = try retail.run(["--stores", "2", "--tills", "2", "--checkouts", "5", "--retry-every", "3"])
        #expect(run.status == 0, "\(run.output) \(run.errorOutput)")
        #expect(run.output.contains("recorded 20 invoices (6 recorded twice as retries)"))
        #expect(try server.query("SELECT count(*) FROM Invoice") == ["20"])
        #expect(try server.query("SELECT count(DISTINCT storeId) FROM Invoice") == ["2"])
        #expect(try server.query("SELECT min(_id) FROM Invoice") == ["S01-T01-000001"])
        // Lines are embedded; the total is subtotal plus tax; each till's #1 chains to the genesis value.
        #expect(try server.query("SELECT count(*) FROM Invoice WHERE json_array_length(lines) BETWEEN 1 AND 5") == ["20"])
        #expect(
            try server.query(
                "SELECT count(*) FROM Invoice WHERE abs(CAST(subtotal AS REAL) + CAST(tax AS REAL) - CAST(total AS REAL)) < 0.001") == [
                    "20"
                ])
        #expect(try server.query("SELECT count(*) FROM Invoice WHERE number = 1 AND previousHash = '\(Self.genesis)'") == ["4"])
        #expect(
            try server.query("SELECT count(DISTINCT previousHash) FROM Invoice WHERE number > 1 AND length(previousHash) = 64") == ["16"])

        // A second run continues every chain from the tills' journals.
        let second = try retail.run(["--stores", "2", "--tills", "1", "--checkouts", "2"])
        #expect(second.status == 0, "\(second.output) \(second.errorOutput)")
        #expect(second.output.contains("re-recorded the last journaled invoice of 4 tills"))
        #expect(try server.query("SELECT count(*) FROM Invoice") == ["24"])
        #expect(try server.query("SELECT max(_id) FROM Invoice WHERE tillId = 'T01' AND storeId = 'S01'") == ["S01-T01-000007"])

        let verify = try retail.verify()
        #expect(verify.status == 0, "\(verify.output) \(verify.errorOutput)")
        #expect(verify.output.contains("S01  T01  7  "))
        #expect(
            verify.output.contains("OK: 4 tills in 2 stores: numbering without gaps, every hash chain unbroken, totals match to the cent"))

        let usage = try runProcess(retail.binary, ["launch"], in: directory.path)
        #expect(usage.status == 2)
    }

    /// The sample killed (by itself) at each step of an invoice, then from
    /// outside while it checks out, with the server killed meanwhile:
    /// afterwards every chain is whole and each invoice is in the database once.
    @Test func crashesOfTheSampleAndTheServerMidCheckoutLeaveEveryChainWhole() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let retail = try Retail(server, in: directory.path)
        for point in ["journal-synced:2", "journaled:3", "committed:2", "journal-synced:1", "committed:4"] {
            let crashed = try retail.run(
                ["--stores", "1", "--tills", "2", "--checkouts", "2"], environment: ["RETAILINVOICES_CRASH_AT": point])
            #expect(crashed.status == 128 + SIGKILL, "\(point): \(crashed.status) \(crashed.errorOutput)")
            if point.hasPrefix("journal-synced") {
                // Killed between the synced temporary journal and its rename: the invoice never existed.
                let names = try FileManager.default.contentsOfDirectory(atPath: retail.data + "/tills")
                #expect(names.contains { $0.hasSuffix(".json.tmp") }, "\(names)")
            }
        }

        // kill -9 of the server, then of the sample, both while invoices are
        // being issued: once in CI, RETAILINVOICES_TEST_KILLS times if set,
        // after a seeded random number of invoices.
        let rounds = Int(ProcessInfo.processInfo.environment["RETAILINVOICES_TEST_KILLS"] ?? "") ?? 1
        var random = SplitMix64(seed: 20)
        for round in 0..<rounds {
            let serverAfter = round == 0 ? 10 : Int.random(in: 1...30, using: &random)
            let sampleAfter = serverAfter + (round == 0 ? 30 : Int.random(in: 0...60, using: &random))
            let process = Process()
            process.executableURL = URL(fileURLWithPath: retail.binary)
            process.arguments = [
                "run", "--app-id", server.appId, "--base-url", server.baseURL, "--data-dir", retail.data,
                "--stores", "1", "--tills", "2", "--checkouts", "2000",
            ]
            process.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
            process.standardError = FileHandle(forWritingAtPath: "/dev/null")
            let base = retail.issued("T01")
            try process.run()
            defer { reap(process, within: 0) }
            let deadline = monotonicNow() + 60
            while retail.issued("T01") < base + serverAfter && process.isRunning && monotonicNow() < deadline { usleep(1_000) }
            if round == 0 {
                // A second run on the same tills would fork their chains: it is refused.
                let second = try retail.run(["--stores", "1", "--tills", "2", "--checkouts", "1"])
                #expect(second.status == 1 && second.errorOutput.contains("another RetailInvoices run is using"), "\(second.errorOutput)")
            }
            server.kill9()
            while retail.issued("T01") < base + sampleAfter && process.isRunning && monotonicNow() < deadline { usleep(1_000) }
            reap(process, within: 0)
            #expect(process.terminationReason == .uncaughtSignal)
            let reached = retail.issued("T01")
            #expect(reached >= base + sampleAfter && reached < base + 2000, "round \(round): not killed mid-checkout: \(reached)")
            try server.restart()
        }

        let last = try retail.run(["--stores", "1", "--tills", "2", "--checkouts", "2"])
        #expect(last.status == 0, "\(last.output) \(last.errorOutput)")
        let issued = retail.issued("T01") + retail.issued("T02")
        #expect(try server.query("SELECT count(*) FROM Invoice") == [String(issued)])
        let verify = try retail.verify()
        #expect(verify.status == 0, "\(verify.output) \(verify.errorOutput)")
        #expect(verify.output.contains("OK: 2 tills in 1 stores"), "\(verify.output)")
    }

    /// Each kind of change to the rows: `verify` exits 1 and names the first broken link.
    @Test func everyKindOfTamperingIsFoundAndLocated() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let retail = try Retail(server, in: directory.path)
        let run = try retail.run(["--stores", "1", "--tills", "2", "--checkouts", "6", "--retry-every", "4"])
        #expect(run.status == 0, "\(run.output) \(run.errorOutput)")
        // The journals as they were before S01 T01 issued #7: against them, a
        // #7 whose chain is perfect is still one the till did not issue.
        try FileManager.default.createDirectory(atPath: directory.path + "/before", withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: retail.data + "/tills", toPath: directory.path + "/before/tills")
        let seventh = try retail.run(["--stores", "1", "--tills", "1", "--checkouts", "1"])
        #expect(seventh.status == 0, "\(seventh.output) \(seventh.errorOutput)")
        server.kill9()
        let pristine = directory.path + "/pristine.sqlite"
        try server.copyDatabase(to: pristine)
        #expect(try retail.verify(["--database", pristine]).status == 0)

        let columns = "_id, _ingested_at, storeId, tillId, number, issuedAt, currency, lines, subtotal, tax, total, previousHash"
        let cases: [(String, String, String)] = [
            (
                "changed amount", "UPDATE Invoice SET total = printf('%.2f', CAST(total AS REAL) + 0.01) WHERE _id = 'S01-T01-000003'",
                "S01 T01 #3: total "
            ),
            (
                "changed line", "UPDATE Invoice SET lines = replace(lines, '\"quantity\":', '\"quantity\":1') WHERE _id = 'S01-T02-000004'",
                "S01 T02 #4: line 1 ("
            ),
            (
                "changed field", "UPDATE Invoice SET issuedAt = issuedAt + 1000 WHERE _id = 'S01-T01-000003'",
                "S01 T01 #4: previousHash "
            ),
            (
                "changed last invoice", "UPDATE Invoice SET currency = 'EUR' WHERE _id = 'S01-T02-000006'",
                "S01 T02 #6: differs from the till's own copy"
            ),
            (
                "deleted row", "DELETE FROM Invoice WHERE _id = 'S01-T02-000002'",
                "S01 T02 #2: missing: the database goes from #1 to #3"
            ),
            (
                "deleted first row", "DELETE FROM Invoice WHERE _id = 'S01-T02-000001'",
                "S01 T02 #1: missing: the till's invoices in the database start at #2"
            ),
            (
                "deleted last row", "DELETE FROM Invoice WHERE _id = 'S01-T01-000007'",
                "S01 T01 #7: missing: the till issued #7 but the database ends at #6"
            ),
            (
                "inserted row with a repeated number",
                "INSERT INTO Invoice (\(columns)) SELECT _id || 'x', _ingested_at, storeId, tillId, number, issuedAt, currency, lines, subtotal, tax, total, previousHash FROM Invoice WHERE _id = 'S01-T02-000003'",
                "S01 T02 #3: a second invoice with this number (_id S01-T02-000003x)"
            ),
            (
                "inserted row at the end",
                "INSERT INTO Invoice (\(columns)) SELECT 'S01-T02-000007', _ingested_at, storeId, tillId, 7, issuedAt, currency, lines, subtotal, tax, total, previousHash FROM Invoice WHERE _id = 'S01-T02-000006'",
                "S01 T02 #7: previousHash "
            ),
            (
                "reordered",
                """
                UPDATE Invoice SET _id = 'tmp', number = 0 WHERE _id = 'S01-T01-000004';
                UPDATE Invoice SET _id = 'S01-T01-000004', number = 4 WHERE _id = 'S01-T01-000005';
                UPDATE Invoice SET _id = 'S01-T01-000005', number = 5 WHERE _id = 'tmp';
                """, "S01 T01 #4: previousHash "
            ),
            (
                "renumbered", "UPDATE Invoice SET number = 9 WHERE _id = 'S01-T01-000005'",
                "S01 T01 #5: missing: the database goes from #4 to #6"
            ),
            (
                "renumbered with its _id", "UPDATE Invoice SET number = 8, _id = 'S01-T01-000008' WHERE _id = 'S01-T01-000007'",
                "S01 T01 #7: missing: the database goes from #6 to #8"
            ),
            (
                "moved to another till", "UPDATE Invoice SET tillId = 'T02' WHERE _id = 'S01-T01-000007'",
                "S01 T01 #7: missing: the till issued #7 but the database ends at #6"
            ),
            (
                "altered hash", "UPDATE Invoice SET previousHash = '\(String(repeating: "f", count: 64))' WHERE _id = 'S01-T02-000005'",
                "S01 T02 #5: previousHash ffffffffffff… is not the hash of #4"
            ),
            (
                "altered genesis", "UPDATE Invoice SET previousHash = '\(String(repeating: "1", count: 64))' WHERE _id = 'S01-T01-000001'",
                "S01 T01 #1: previousHash 111111111111… is not the genesis value"
            ),
            (
                "a fraction of a cent", "UPDATE Invoice SET tax = '0.125' WHERE _id = 'S01-T01-000002'",
                "S01 T01 #2: tax 0.125 is not a whole number of cents (_id S01-T01-000002)"
            ),
        ]
        for (name, sql, expected) in cases {
            let path = directory.path + "/tampered.sqlite"
            try? FileManager.default.removeItem(atPath: path)
            try FileManager.default.copyItem(atPath: pristine, toPath: path)
            let db = try SQLiteConnection(path: path, options: .init(access: .readWrite))
            try db.execute(sql: sql)
            db.close()
            let verify = try retail.verify(["--database", path])
            #expect(verify.status == 1, "\(name): \(verify.output) \(verify.errorOutput)")
            #expect(verify.output.contains("FAILED: the first broken link is \(expected)"), "\(name): \(verify.output)")
            if name == "changed amount" {
                let export = try retail.export(["--database", path, "--store", "S01", "--date", "2026-12-01"])
                #expect(export.status == 1 && export.output.isEmpty, "\(export.output)")
                #expect(export.errorOutput.contains("not exported: the first broken link is S01 T01 #3: total "), "\(export.errorOutput)")
            }
            if name == "deleted row" {
                // The database alone shows a gap too.
                let alone = try retail.verify(["--database", path], dataDirectory: directory.path + "/nowhere")
                #expect(alone.status == 1 && alone.output.contains(expected), "\(alone.output)")
            }
        }

        // A #7 with a perfect chain that the till (its journal before #7) never issued.
        let forged = try retail.verify(["--database", pristine], dataDirectory: directory.path + "/before")
        #expect(forged.status == 1)
        #expect(
            forged.output.contains("FAILED: the first broken link is S01 T01 #7: not issued by this till (its journal ends at #6)"),
            "\(forged.output)")
        // Without journals, only the database is checked, and verify says so.
        let alone = try retail.verify(["--database", pristine], dataDirectory: directory.path + "/nowhere")
        #expect(alone.status == 0, "\(alone.output)")
        #expect(alone.output.contains("note: no till journals in"))
    }

    /// A seeded run with simulated times across midnight, UTC: the exact
    /// CSV of each day, the same on every export, on standard output and in a file.
    @Test func exportWritesTheSameBytesEveryTime() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let retail = try Retail(server, in: directory.path)
        let run = try retail.run(Self.seededRun)
        #expect(run.status == 0, "\(run.output) \(run.errorOutput)")
        let database = ["--database", server.databasePath]
        let first = try retail.export(database + ["--store", "S01", "--date", "2026-12-01"])
        #expect(first.status == 0, "\(first.errorOutput)")
        #expect(first.output == Self.firstDay, "\(first.output)")
        let second = try retail.export(database + ["--store", "S01", "--date", "2026-12-02"])
        #expect(second.output == Self.secondDay, "\(second.output)")
        #expect(try retail.export(database + ["--store", "S01", "--date", "2026-12-01"]).output == first.output)
        let file = directory.path + "/S01-2026-12-01.csv"
        let toFile = try retail.export(database + ["--store", "S01", "--date", "2026-12-01", "--output", file])
        #expect(toFile.status == 0 && toFile.output.isEmpty)
        #expect(FileManager.default.contents(atPath: file) == Data(Self.firstDay.utf8))
        let none = try retail.export(database + ["--store", "S09", "--date", "2026-12-01"])
        #expect(none.status == 0 && none.output == Self.header)
    }

    /// The same against a PostgreSQL sink: verify passes, export gives the
    /// same bytes as from SQLite, and changes to rows are found.
    @Test(
        .enabled(
            if: TestEnvironment.runs(ifAvailable: ProcessInfo.processInfo.environment["INGEST_TEST_POSTGRES_URL"] != nil),
            "INGEST_TEST_POSTGRES_URL is not set: run Scripts/test.sh, which starts PostgreSQL"))
    func verifyAndExportAgainstPostgreSQL() throws {
        let directory = try TemporaryDirectory("samples")
        let database = try RetailPostgresDatabase()
        let server = try SampleServer(
            in: directory.path, config: Self.postgresConfig(database.url, state: directory.path + "/server-data"),
            appId: "retail")
        let retail = try Retail(server, in: directory.path)
        let run = try retail.run(Self.seededRun)
        #expect(run.status == 0, "\(run.output) \(run.errorOutput)")
        let postgres = ["--postgres", database.url]
        let verify = try retail.verify(postgres)
        #expect(verify.status == 0, "\(verify.output) \(verify.errorOutput)")
        #expect(verify.output.contains("OK: 4 tills in 2 stores"))
        #expect(try retail.export(postgres + ["--store", "S01", "--date", "2026-12-01"]).output == Self.firstDay)
        #expect(try retail.export(postgres + ["--store", "S01", "--date", "2026-12-02"]).output == Self.secondDay)

        let db = try PostgresConnection(database.url)
        defer { db.close() }
        try db.execute(#"UPDATE "Invoice" SET "issuedAt" = "issuedAt" + interval '1 millisecond' WHERE "_id" = 'S02-T01-000001'"#)
        try db.execute(#"DELETE FROM "Invoice" WHERE "_id" = 'S02-T02-000002'"#)
        try db.execute(#"UPDATE "Invoice" SET "total" = "total" + 0.01 WHERE "_id" = 'S01-T02-000001'"#)
        let tampered = try retail.verify(postgres)
        #expect(tampered.status == 1)
        for link in [
            "S01 T02 #1: total ", "S02 T01 #2: previousHash ", "S02 T02 #2: missing: the till issued #2 but the database ends at #1",
        ] {
            #expect(tampered.output.contains("BROKEN \(link)"), "\(link): \(tampered.output)")
        }
        #expect(tampered.output.contains("FAILED: the first broken link is S01 T02 #1: total"))
    }

    // MARK: The seeded run and its CSV

    /// 2 stores × 2 tills × 2 checkouts from 23:59:58 UTC, one second apart:
    /// S01's first invoices are on 1 December, everything else on the 2nd.
    static let seededRun = [
        "--stores", "2", "--tills", "2", "--checkouts", "2", "--retry-every", "3", "--seed", "4",
        "--simulated-time", "2026-12-01T23:59:58Z",
    ]

    static let header =
        "store,till,number,invoice_id,issued_at,currency,line,sku,quantity,unit_price,line_amount,"
        + "invoice_subtotal,invoice_tax,invoice_total,previous_hash,invoice_hash\r\n"

    static let firstDay =
        header + """
            S01,T01,1,S01-T01-000001,2026-12-01T23:59:58.000Z,USD,1,"MUG ""I ♥ NY"", 0.3L",4,5.95,23.80,45.30,3.74,49.04,0000000000000000000000000000000000000000000000000000000000000000,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526\r
            S01,T01,1,S01-T01-000001,2026-12-01T23:59:58.000Z,USD,2,CHEESE-200G,2,4.15,8.30,45.30,3.74,49.04,0000000000000000000000000000000000000000000000000000000000000000,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526\r
            S01,T01,1,S01-T01-000001,2026-12-01T23:59:58.000Z,USD,3,WATER-6X1.5L,4,3.30,13.20,45.30,3.74,49.04,0000000000000000000000000000000000000000000000000000000000000000,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526\r
            S01,T02,1,S01-T02-000001,2026-12-01T23:59:59.000Z,USD,1,MILK-1L,3,1.19,3.57,23.52,1.94,25.46,0000000000000000000000000000000000000000000000000000000000000000,987eda8c3b05a98146b3131cdd5ccc418656791fdfa8a9ba4376c85b0b933e29\r
            S01,T02,1,S01-T02-000001,2026-12-01T23:59:59.000Z,USD,2,NEWSPAPER,3,2.50,7.50,23.52,1.94,25.46,0000000000000000000000000000000000000000000000000000000000000000,987eda8c3b05a98146b3131cdd5ccc418656791fdfa8a9ba4376c85b0b933e29\r
            S01,T02,1,S01-T02-000001,2026-12-01T23:59:59.000Z,USD,3,CHEESE-200G,3,4.15,12.45,23.52,1.94,25.46,0000000000000000000000000000000000000000000000000000000000000000,987eda8c3b05a98146b3131cdd5ccc418656791fdfa8a9ba4376c85b0b933e29\r

            """

    static let secondDay =
        header + """
            S01,T01,2,S01-T01-000002,2026-12-02T00:00:02.000Z,USD,1,"MUG ""I ♥ NY"", 0.3L",4,5.95,23.80,35.67,2.94,38.61,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526,63b55d857566c8b82ea47975ebdf900d2b263d79cbcaa3c9e21d830ddd6298d2\r
            S01,T01,2,S01-T01-000002,2026-12-02T00:00:02.000Z,USD,2,MILK-1L,3,1.19,3.57,35.67,2.94,38.61,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526,63b55d857566c8b82ea47975ebdf900d2b263d79cbcaa3c9e21d830ddd6298d2\r
            S01,T01,2,S01-T01-000002,2026-12-02T00:00:02.000Z,USD,3,"MUG ""I ♥ NY"", 0.3L",1,5.95,5.95,35.67,2.94,38.61,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526,63b55d857566c8b82ea47975ebdf900d2b263d79cbcaa3c9e21d830ddd6298d2\r
            S01,T01,2,S01-T01-000002,2026-12-02T00:00:02.000Z,USD,4,BREAD,1,2.35,2.35,35.67,2.94,38.61,3cba143fc6dfc5f1cfbc0e43f62fbc9be42c2f8e5033fa21e174fd6424ea7526,63b55d857566c8b82ea47975ebdf900d2b263d79cbcaa3c9e21d830ddd6298d2\r
            S01,T02,2,S01-T02-000002,2026-12-02T00:00:03.000Z,USD,1,"MUG ""I ♥ NY"", 0.3L",2,5.95,11.90,27.58,2.28,29.86,987eda8c3b05a98146b3131cdd5ccc418656791fdfa8a9ba4376c85b0b933e29,a513d15af9090efba0c3e6608ab54f2e85ce004e90474eb47068e627ce1fb951\r
            S01,T02,2,S01-T02-000002,2026-12-02T00:00:03.000Z,USD,2,"MUG ""I ♥ NY"", 0.3L",2,5.95,11.90,27.58,2.28,29.86,987eda8c3b05a98146b3131cdd5ccc418656791fdfa8a9ba4376c85b0b933e29,a513d15af9090efba0c3e6608ab54f2e85ce004e90474eb47068e627ce1fb951\r
            S01,T02,2,S01-T02-000002,2026-12-02T00:00:03.000Z,USD,3,CHOCOLATE,2,1.89,3.78,27.58,2.28,29.86,987eda8c3b05a98146b3131cdd5ccc418656791fdfa8a9ba4376c85b0b933e29,a513d15af9090efba0c3e6608ab54f2e85ce004e90474eb47068e627ce1fb951\r

            """

    static func postgresConfig(_ url: String, state: String) -> String {
        """
        {
          "stateDirectory": "\(state)",
          "apps": [
            {
              "id": "retail",
              "auth": { "anon-user": {} },
              "schema": {
                "Invoice": {
                  "kind": "asymmetric",
                  "properties": {
                    "_id": "string", "storeId": "string", "tillId": "string", "number": "int", "issuedAt": "date",
                    "currency": "string", "lines": "InvoiceLine[]",
                    "subtotal": "decimal128", "tax": "decimal128", "total": "decimal128", "previousHash": "string"
                  }
                },
                "InvoiceLine": {
                  "kind": "embedded",
                  "properties": { "sku": "string", "quantity": "int", "unitPrice": "decimal128", "amount": "decimal128" }
                }
              },
              "sink": { "kind": "postgres", "connection": "\(url)" }
            }
          ]
        }
        """
    }
}

/// A database of its own on the test PostgreSQL (`INGEST_TEST_POSTGRES_URL`,
/// which Scripts/test.sh sets), dropped on release.
final class RetailPostgresDatabase {
    let name = "retail_test_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
    let base: String
    let url: String

    init() throws {
        guard let base = ProcessInfo.processInfo.environment["INGEST_TEST_POSTGRES_URL"] else {
            throw TestSupportError("INGEST_TEST_POSTGRES_URL is not set (CI=true): Scripts/test.sh starts PostgreSQL")
        }
        self.base = base
        let admin = try PostgresConnection(base)
        defer { admin.close() }
        try admin.execute("CREATE DATABASE \(name)")
        // postgresql://user@host:port/db?query with db replaced.
        var components = URLComponents(string: base)
        components?.path = "/" + name
        url = components?.string ?? base
    }

    deinit {
        guard let admin = try? PostgresConnection(base) else { return }
        _ = try? admin.execute("DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
        admin.close()
    }
}

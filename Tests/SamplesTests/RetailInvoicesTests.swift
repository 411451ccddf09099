import Foundation
import Testing
import IngestTestSupport

/// The RetailInvoices binary against a real ingest-server: repeat
/// recordings land once, and verify matches to the cent (and notices a
/// changed cent).
@Suite struct RetailInvoicesTests {
    @Test func invoicesLandOnceAndVerifyMatchesToTheCent() throws {
        let directory = try TemporaryDirectory("samples")
        let server = try SampleServer(in: directory.path)
        let retail = try builtExecutable("RetailInvoices")
        let data = directory.path + "/retail"
        let run = try runProcess(retail, ["run", "--app-id", server.appId, "--base-url", server.baseURL,
                                          "--stores", "2", "--tills", "2", "--checkouts", "5", "--retry-every", "3",
                                          "--data-dir", data], in: directory.path)
        #expect(run.status == 0, "\(run.output) \(run.errorOutput)")
        #expect(run.output.contains("recorded 20 invoices (6 recorded twice as retries)"))
        #expect(try server.query("SELECT count(*) FROM Invoice") == ["20"])
        #expect(try server.query("SELECT count(DISTINCT storeId) FROM Invoice") == ["2"])
        #expect(try server.query("SELECT min(_id) FROM Invoice") == ["S01-T01-000001"])
        // Lines are embedded; the total is subtotal plus tax.
        #expect(try server.query("SELECT count(*) FROM Invoice WHERE json_array_length(lines) BETWEEN 1 AND 5") == ["20"])
        #expect(try server.query("SELECT count(*) FROM Invoice WHERE abs(CAST(subtotal AS REAL) + CAST(tax AS REAL) - CAST(total AS REAL)) < 0.001") == ["20"])

        // A second run continues the numbering.
        let second = try runProcess(retail, ["run", "--app-id", server.appId, "--base-url", server.baseURL,
                                             "--stores", "2", "--tills", "1", "--checkouts", "2", "--data-dir", data], in: directory.path)
        #expect(second.status == 0, "\(second.output) \(second.errorOutput)")
        #expect(try server.query("SELECT count(*) FROM Invoice") == ["24"])
        #expect(try server.query("SELECT max(_id) FROM Invoice WHERE tillId = 'T01' AND storeId = 'S01'") == ["S01-T01-000007"])

        let verify = try runProcess(retail, ["verify", "--database", server.databasePath, "--data-dir", data], in: directory.path)
        #expect(verify.status == 0, "\(verify.output) \(verify.errorOutput)")
        #expect(verify.output.contains("OK: every store's invoices and total match to the cent"))

        // One cent more in the database: verify must fail.
        _ = try server.query("UPDATE Invoice SET total = printf('%.2f', CAST(total AS REAL) + 0.01) WHERE _id = 'S02-T02-000003'")
        let tampered = try runProcess(retail, ["verify", "--database", server.databasePath, "--data-dir", data], in: directory.path)
        #expect(tampered.status == 1)
        #expect(tampered.output.contains("S02") && tampered.output.contains("MISMATCH"))

        let usage = try runProcess(retail, ["launch"], in: directory.path)
        #expect(usage.status == 2)
    }
}

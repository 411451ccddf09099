import Foundation
import Testing
import IngestTestSupport

/// Issue 18 ("Docs that disagree with the code"): checks that keep the docs
/// and what the binaries say in step.
@Suite("Docs agree with the code")
struct DocsAgreementTests {
    var root: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    func text(_ path: String) throws -> String {
        try String(contentsOf: root.appendingPathComponent(path), encoding: .utf8)
    }

    /// `ingest-server --help` and Docs/Server.md name the same `--synchronous` modes.
    @Test func synchronousModesAgree() throws {
        let help = try runIngestServer(["--help"]).output
        let line = try #require(help.split(separator: "\n").first { $0.contains("--synchronous") }, "\(help)")
        let documented = try #require(try text("Docs/Server.md").split(separator: "\n").first { $0.hasPrefix("| `--synchronous MODE`") })
        for mode in ["FULL", "NORMAL", "EXTRA"] {
            #expect(line.contains(mode), "\(line)")
            #expect(documented.contains("`\(mode)`"), "\(documented)")
        }
    }

    /// Every relative link between the Markdown files resolves.
    @Test func relativeLinksResolve() throws {
        var files = try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent("Docs").path)
            .filter { $0.hasSuffix(".md") }.map { "Docs/" + $0 }
        files += ["README.md"] + ["LogForwarder", "RetailInvoices", "ServerLogging", "WeatherStation"].map { "Samples/\($0)/README.md" }
        let pattern = try NSRegularExpression(pattern: #"\]\(([^)#\s]+)(#[^)]*)?\)"#)
        for file in files {
            let content = try text(file)
            let base = root.appendingPathComponent(file).deletingLastPathComponent()
            for match in pattern.matches(in: content, range: NSRange(content.startIndex..., in: content)) {
                guard let range = Range(match.range(at: 1), in: content) else { continue }
                let target = String(content[range])
                if target.contains("://") || target.hasPrefix("mailto:") { continue }
                #expect(
                    FileManager.default.fileExists(atPath: base.appendingPathComponent(target).path),
                    "\(file) links to \(target), which does not exist")
            }
        }
    }

    /// Sample commands work on any machine: no build paths of one machine.
    @Test func sampleReadmesHaveNoMachineSpecificPaths() throws {
        for sample in ["LogForwarder", "RetailInvoices", "ServerLogging", "WeatherStation"] {
            let readme = try text("Samples/\(sample)/README.md")
            #expect(!readme.contains("/work/"), "Samples/\(sample)/README.md names a machine-specific path")
        }
    }
}

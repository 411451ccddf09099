import Foundation
import Testing
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

/// The typed query API must reject asymmetric types at compile time. This
/// type-checks a small client file against the DataIngest module this test
/// bundle was built with and expects the compiler's errors on exactly the
/// lines that query an asymmetric type; the same file's query of an `Object`
/// type proves that the module was found and the accepted use compiles.
@Suite struct TypedQueryCompileTests {
    /// The client code. The lines marked `// rejected` must fail to compile.
    static let source = """
        import DataIngest

        final class CompileCheckReading: AsymmetricObject {
            @Persisted(primaryKey: true) var _id: ObjectId
        }

        final class CompileCheckSetting: Object {
            @Persisted(primaryKey: true) var _id: ObjectId
        }

        func query(_ realm: Realm) throws {
            _ = realm.objects(CompileCheckSetting.self)
            _ = try realm.object(ofType: CompileCheckSetting.self, forPrimaryKey: ObjectId.generate())
            _ = realm.objects(CompileCheckReading.self) // rejected
            _ = try realm.object(ofType: CompileCheckReading.self, forPrimaryKey: ObjectId.generate()) // rejected
        }

        """

    /// The directory of the built modules (`.../debug/Modules`), next to
    /// this test bundle's executable.
    static var modulesDirectory: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
            .deletingLastPathComponent().appendingPathComponent("Modules")
    }

    /// The package root, from this file's path (Tests/DataIngestTests/…).
    static var packageRoot: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }

    /// `swiftc`: next to the `swift` driver on PATH, as `swift test` runs.
    static func compilerPath() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/swiftc"
            if access(candidate, X_OK) == 0 { return candidate }
        }
        return nil
    }

    @Test(.timeLimit(.minutes(2)))
    func typedQueriesRejectAsymmetricTypesAtCompileTime() throws {
        let compiler = try #require(Self.compilerPath(), "swiftc is not on PATH")
        let modules = Self.modulesDirectory
        try #require(
            FileManager.default.fileExists(atPath: modules.appendingPathComponent("DataIngest.swiftmodule").path),
            "no DataIngest.swiftmodule in \(modules.path)")
        let directory = try TemporaryDirectory()
        let file = directory.file("client.swift")
        try Data(Self.source.utf8).write(to: file)

        // The C modules DataIngest and IngestCore import, by their module maps.
        let moduleMaps = ["CSQLite", "CZlib", "CCrypto", "CLinux"].flatMap { name in
            ["-Xcc", "-fmodule-map-file=" + Self.packageRoot.appendingPathComponent("Sources/\(name)/module.modulemap").path]
        }
        let typecheck = try runProcess(
            compiler, ["-typecheck", "-swift-version", "6", "-I", modules.path] + moduleMaps + [file.path],
            mergingOutput: true, timeout: 110)
        let diagnostics = typecheck.output

        #expect(typecheck.status != 0, "the asymmetric queries compiled:\n\(diagnostics)")
        let rejectedLines = Self.source.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            .filter { $0.element.hasSuffix("// rejected") }.map { $0.offset + 1 }
        let errorLines = diagnostics.split(separator: "\n").compactMap { line -> Int? in
            // "<path>:<line>:<column>: error: <message>"
            guard line.hasPrefix(file.path + ":"), line.contains(": error: ") else { return nil }
            return Int(line.dropFirst(file.path.count + 1).prefix { $0 != ":" })
        }
        #expect(Set(errorLines) == Set(rejectedLines), "errors on lines \(errorLines), expected \(rejectedLines):\n\(diagnostics)")
        #expect(diagnostics.contains("requires that 'CompileCheckReading' inherit from 'Object'"), "\(diagnostics)")
    }
}

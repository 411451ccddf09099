import Foundation
import IngestSupport
import Logging

extension ServerConfiguration {
    /// Reads and parses a JSON configuration file (see Docs/Server.md for the reference).
    ///
    /// Relative file paths inside the file (`publicKeyFile`) are resolved
    /// against the file's directory; a relative `stateDirectory` against the
    /// current directory.
    ///
    /// - Parameter environment: where `…Env` fields (`signingSecretEnv`,
    ///   `secretEnv`) are looked up. Default: the process environment.
    /// - Throws: ``ConfigError`` naming the file and the field path.
    package init(
        contentsOfFile path: String,
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(
                .unreadable, path: "", "cannot read the configuration file: \(error.localizedDescription)",
                file: path)
        }
        let directory = (path as NSString).deletingLastPathComponent
        do {
            try self.init(
                json: [UInt8](data), baseDirectory: directory.isEmpty ? "." : directory,
                environment: environment)
        } catch var error {
            error.file = path
            throw error
        }
    }

    /// Parses a JSON configuration.
    ///
    /// ```swift
    /// let config = try ServerConfiguration(json: Array(#"{"apps": [{"id": "a1", "auth": {"anon-user": {}}}]}"#.utf8))
    /// ```
    ///
    /// - Parameters:
    ///   - baseDirectory: where relative `publicKeyFile` paths are resolved.
    ///   - environment: where `…Env` fields are looked up.
    package init(
        json bytes: [UInt8], baseDirectory: String = ".",
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(ConfigError) {
        let root: JSONValue
        do {
            root = try JSONValue(parsing: bytes, options: .strict())
        } catch {
            throw ConfigError(.syntax, path: "", error.description)
        }
        let context = ParseContext(baseDirectory: baseDirectory, environment: environment)
        var reader = try ConfigReader(root, path: "")
        self.init()
        if let host = try reader.string("host") {
            guard !host.isEmpty else { throw ConfigError(.invalidValue, path: "host", "the host must not be empty") }
            self.host = host
        }
        if let port = try reader.integer("port", in: 0...65_535) { self.port = Int(port) }
        if let directory = try reader.string("stateDirectory") {
            guard !directory.isEmpty else {
                throw ConfigError(.invalidValue, path: "stateDirectory", "the state directory must not be empty")
            }
            stateDirectory = directory
        }
        // Shared state in PostgreSQL (Storage/PostgresStateDatabase.swift).
        if var stateReader = try reader.object("sharedState") {
            let kind = try stateReader.requiredString("kind")
            guard kind == "postgres" else {
                throw ConfigError(.invalidValue, path: "sharedState.kind", "unknown kind \"\(kind)\"; use postgres")
            }
            sharedStatePostgres = try stateReader.requiredString("connection")
            try stateReader.finish()
        }
        if let level = try reader.string("logLevel") {
            guard let parsed = Logger.Level(rawValue: level) else {
                throw ConfigError(
                    .invalidValue, path: "logLevel",
                    "unknown log level \"\(level)\"; use "
                        + Logger.Level.allCases.map(\.rawValue).joined(separator: ", "))
            }
            logLevel = parsed
        }
        if var limitsReader = try reader.object("limits") {
            limits = try Limits(reader: &limitsReader)
            try limitsReader.finish()
        }
        guard let appValues = try reader.array("apps") else {
            throw ConfigError(.missingField, path: "apps", "required field is missing; declare at least one app")
        }
        guard !appValues.isEmpty else {
            throw ConfigError(.invalidValue, path: "apps", "declare at least one app")
        }
        var ids = Set<String>()
        for (index, value) in appValues.enumerated() {
            let app = try AppConfiguration(json: value, path: "apps[\(index)]", context: context)
            guard ids.insert(app.id).inserted else {
                throw ConfigError(.invalidValue, path: "apps[\(index)].id", "app id \"\(app.id)\" is declared twice")
            }
            apps.append(app)
        }
        try reader.finish()
    }

    /// The development server's configuration: one app with anonymous auth,
    /// development mode and an SQLite sink, everything under `stateDirectory`.
    ///
    /// The app id is generated on first use (`dev-` and 8 random characters)
    /// and kept in `<stateDirectory>/development-app-id`, so clients keep
    /// working across restarts. Print it at startup.
    ///
    /// - Throws: ``ConfigError`` with code `.unreadable` if the state directory
    ///   cannot be created or the id file cannot be read or written.
    package static func development(
        stateDirectory: String = "./ingest-data",
        port: Int = 9090
    ) throws(ConfigError) -> ServerConfiguration {
        let idPath = (stateDirectory as NSString).appendingPathComponent("development-app-id")
        let id: String
        do {
            try PrivateFiles.makeDirectory(stateDirectory)  // 0700: ingested data, secrets
            if let stored = try? String(contentsOfFile: idPath, encoding: .utf8) {
                let trimmed = stored.trimmingCharacters(in: .whitespacesAndNewlines)
                guard AppConfiguration.isValidId(trimmed) else {
                    throw ConfigError(
                        .invalidValue, path: "", "\(idPath) holds an invalid app id; delete the file",
                        file: idPath)
                }
                id = trimmed
            } else {
                let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
                let random = try Crypto.randomBytes(8)
                id = "dev-" + String(decoding: random.map { alphabet[Int($0) % alphabet.count] }, as: UTF8.self)
                try PrivateFiles.write(Array((id + "\n").utf8), to: idPath)
            }
        } catch let error as ConfigError {
            throw error
        } catch {
            throw ConfigError(
                .unreadable, path: "", "cannot prepare the development state directory: \(error)",
                file: stateDirectory)
        }
        var app = AppConfiguration(id: id)
        app.auth.anonymous = AnonymousSettings()
        app.developmentMode = true
        return ServerConfiguration(port: port, stateDirectory: stateDirectory, apps: [app])
    }
}

/// Where relative paths and environment references in a configuration resolve.
struct ParseContext {
    var baseDirectory: String
    var environment: [String: String]

    func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (baseDirectory as NSString).appendingPathComponent(path)
    }

    /// A secret given inline (`<key>`) or by environment variable (`<key>Env`); exactly one may be set.
    func secret(_ reader: inout ConfigReader, key: String, minimumBytes: Int) throws(ConfigError) -> [UInt8]? {
        let inline = try reader.string(key)
        let variable = try reader.string(key + "Env")
        let secret: String
        let path: String
        switch (inline, variable) {
        case (nil, nil): return nil
        case (.some, .some):
            throw ConfigError(.invalidValue, path: reader.path(key + "Env"), "set either \(key) or \(key)Env, not both")
        case (.some(let text), nil):
            secret = text
            path = reader.path(key)
        case (nil, .some(let name)):
            guard let text = environment[name] else {
                throw ConfigError(
                    .invalidValue, path: reader.path(key + "Env"),
                    "environment variable \(name) is not set")
            }
            secret = text
            path = reader.path(key + "Env")
        }
        guard secret.utf8.count >= minimumBytes else {
            throw ConfigError(
                .invalidValue, path: path,
                "the secret has \(secret.utf8.count) bytes; use at least \(minimumBytes) random bytes "
                    + "(e.g. `openssl rand -base64 48`)")
        }
        return Array(secret.utf8)
    }
}

extension ServerConfiguration.Limits {
    init(reader: inout ConfigReader) throws(ConfigError) {
        self.init()
        let large: ClosedRange<Int64> = 1...(1 << 40)
        if let value = try reader.integer("workerThreads", in: 1...256) { workerThreads = Int(value) }
        if let value = try reader.integer("maxConnections", in: 1...1_000_000) { maxConnections = Int(value) }
        if let value = try reader.integer("maxHeaderBytes", in: 256...(1 << 24)) { maxHeaderBytes = Int(value) }
        if let value = try reader.integer("maxHeaderCount", in: 1...10_000) { maxHeaderCount = Int(value) }
        if let value = try reader.integer("maxBodyBytes", in: large) { maxBodyBytes = Int(value) }
        if let value = try reader.integer("maxInflatedBytes", in: large) { maxInflatedBytes = Int(value) }
        if let value = try reader.integer("maxInflateRatio", in: 1...100_000) { maxInflateRatio = Int(value) }
        if let value = try reader.seconds("headerTimeoutSeconds") { headerTimeoutSeconds = value }
        if let value = try reader.seconds("bodyIdleTimeoutSeconds") { bodyIdleTimeoutSeconds = value }
        if let value = try reader.seconds("keepAliveTimeoutSeconds") { keepAliveTimeoutSeconds = value }
        if let value = try reader.seconds("writeTimeoutSeconds") { writeTimeoutSeconds = value }
        if let value = try reader.seconds("shutdownGraceSeconds") { shutdownGraceSeconds = value }
        if let value = try reader.seconds("syncIdleTimeoutSeconds") { syncIdleTimeoutSeconds = value }
    }
}

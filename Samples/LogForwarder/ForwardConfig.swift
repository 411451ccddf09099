import DataIngest
import Foundation
import IngestSupport

/// The configuration file (`--config`), JSON, for a forwarder a system
/// administrator runs as a service: the sources (paths and globs, each with
/// its format and multiline rules), the server, the store directory and the
/// limits. Every key is optional but `sources` (unless FILEs are given);
/// unknown keys are errors, so a typo is not silently ignored. Relative
/// paths are relative to the file's directory. Read with the project's own
/// JSON parser (duplicate keys rejected).
///
/// ```json
/// {
///   "server": { "url": "https://ingest.example.com", "appId": "prod-k3v9x0qa", "credentials": { "apiKey": "…" } },
///   "dataDir": "/var/lib/ingest-forward",
///   "sources": [
///     { "paths": ["/var/log/app/*.log"], "format": "json",
///       "multiline": { "start": "^\\d{4}-\\d{2}-\\d{2} ", "maxBytes": 65536, "timeout": 1 } },
///     { "paths": ["/var/log/containers/*.log"], "format": "cri" }
///   ],
///   "limits": { "maxPendingBytes": 1073741824, "maxOpenFiles": 256 }
/// }
/// ```
struct ForwardConfig {
    var appId: String?
    var baseURL: URL?
    var credentials: Credentials?
    var dataDirectory: String?
    var sources: [SourceRule] = []
    var batchLines: Int?
    var fingerprintBytes: Int?
    var maxOpenFiles: Int?
    var maxPendingBytes: Int?
    var maxRetryDelay: Double?
    var uploadTimeout: Double?
    var scanInterval: Double?
    var gzip: GzipMode?
    var poll: Bool?
    var metricsFile: String?

    init() {}

    /// Reads and checks the file; the error names the file and the key path
    /// (`sources[1].multiline.start`), or the line and column of a JSON
    /// syntax error.
    init(contentsOfFile file: String) throws(ConfigError) {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigError(.unreadable, path: "", "cannot be read (\(String(cString: strerror(errno))))", file: file)
        }
        let value: JSONValue
        do {
            value = try JSONValue(parsing: [UInt8](data), options: .strict())
        } catch {
            throw ConfigError(.syntax, path: "", "\(error)", file: file)
        }
        let directory = (file as NSString).deletingLastPathComponent
        func resolve(_ path: String) -> String {
            path.hasPrefix("/") || directory.isEmpty ? path : directory + "/" + path
        }
        do throws(ConfigError) {
            var root = try ConfigReader(value, path: "")
            if var server = try root.object("server") {
                appId = try server.string("appId")
                if let text = try server.string("url") {
                    guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil else {
                        throw ConfigError(.invalidValue, path: server.path("url"), "needs an http(s) URL, not \"\(text)\"")
                    }
                    baseURL = url
                }
                if var reader = try server.object("credentials") {
                    credentials = try Self.credentials(&reader)
                    try reader.finish()
                }
                try server.finish()
            }
            dataDirectory = try root.string("dataDir").map(resolve)
            metricsFile = try root.string("metricsFile").map(resolve)
            if let text = try root.string("gzip") {
                guard let mode = GzipMode(rawValue: text) else {
                    throw ConfigError(.invalidValue, path: root.path("gzip"), "must be \"read\" or \"skip\", not \"\(text)\"")
                }
                gzip = mode
            }
            poll = try root.bool("poll")
            scanInterval = try root.seconds("scanInterval")
            maxRetryDelay = try root.seconds("maxRetryDelay")
            uploadTimeout = try root.seconds("uploadTimeout")
            if var limits = try root.object("limits") {
                maxPendingBytes = try limits.integer("maxPendingBytes", in: 4_096...(1 << 50)).map { Int($0) }
                maxOpenFiles = try limits.integer("maxOpenFiles", in: 1...1_000_000).map { Int($0) }
                batchLines = try limits.integer("batchLines", in: 1...1_000_000).map { Int($0) }
                fingerprintBytes = try limits.integer("fingerprintBytes", in: 1...1_048_576).map { Int($0) }
                try limits.finish()
            }
            for (index, item) in (try root.array("sources") ?? []).enumerated() {
                var source = try ConfigReader(item, path: root.path("sources") + "[\(index)]")
                sources.append(try Self.source(&source, resolve: resolve))
                try source.finish()
            }
            try root.finish()
        } catch var error {
            error.file = file
            throw error
        }
    }

    private static func credentials(_ reader: inout ConfigReader) throws(ConfigError) -> Credentials {
        let apiKey = try reader.string("apiKey")
        let email = try reader.string("email")
        let password = try reader.string("password")
        let jwt = try reader.string("jwt")
        switch (apiKey, email, password, jwt) {
        case (let key?, nil, nil, nil): return .userAPIKey(key)
        case (nil, let email?, let password?, nil): return .emailPassword(email: email, password: password)
        case (nil, nil, nil, let token?): return .jwt(token: token)
        case (nil, nil, nil, nil): return .anonymous
        default:
            throw ConfigError(
                .invalidValue, path: reader.path, "give one of \"apiKey\", \"email\" with \"password\", or \"jwt\" (none: anonymous)")
        }
    }

    private static func source(_ reader: inout ConfigReader, resolve: (String) -> String) throws(ConfigError) -> SourceRule {
        guard let paths = try reader.array("paths"), !paths.isEmpty else {
            throw ConfigError(.missingField, path: reader.path("paths"), "required: a non-empty array of paths or globs")
        }
        var patterns: [PathPattern] = []
        for (index, item) in paths.enumerated() {
            guard let text = item.stringValue, !text.isEmpty else {
                throw ConfigError(.invalidValue, path: reader.path("paths") + "[\(index)]", "expected a path or glob (a string)")
            }
            patterns.append(PathPattern(resolve(text)))
        }
        var rule = SourceRule(patterns: patterns)
        if let text = try reader.string("format") {
            guard let format = LineFormat(rawValue: text) else {
                let names = LineFormat.allCases.map(\.rawValue).joined(separator: ", ")
                throw ConfigError(.invalidValue, path: reader.path("format"), "must be one of \(names), not \"\(text)\"")
            }
            rule.format = format
        }
        if var multiline = try reader.object("multiline") {
            let start = try multiline.string("start")
            let continuation = try multiline.string("continue")
            if start != nil && continuation != nil {
                throw ConfigError(.invalidValue, path: multiline.path, "give \"start\" or \"continue\", not both")
            }
            for (key, pattern) in [("start", start), ("continue", continuation)] {
                guard let pattern else { continue }
                guard let regex = try? NSRegularExpression(pattern: pattern) else {
                    throw ConfigError(.invalidValue, path: multiline.path(key), "\"\(pattern)\" is not a valid regular expression")
                }
                rule.multiline = key == "start" ? .start(regex) : .continuation(regex)
            }
            if let bytes = try multiline.integer("maxBytes", in: 1...(64 << 20)) { rule.multilineMaxBytes = Int(bytes) }
            if let timeout = try multiline.seconds("timeout") { rule.multilineTimeout = timeout }
            try multiline.finish()
        }
        return rule
    }
}

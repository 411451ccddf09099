import Foundation
import IngestSupport

extension AppConfiguration {
    /// Parses one element of the `apps` array.
    init(json value: JSONValue, path: String, context: ParseContext) throws(ConfigError) {
        var reader = try ConfigReader(value, path: path)
        let id = try reader.requiredString("id")
        guard AppConfiguration.isValidId(id) else {
            throw ConfigError(
                .invalidValue, path: reader.path("id"),
                "invalid app id \"\(id)\"; use 1-64 characters from A-Z a-z 0-9 - _")
        }
        self.init(id: id)
        if var authReader = try reader.object("auth") {
            auth = try AuthConfiguration(reader: &authReader, context: context)
            try authReader.finish()
        }
        signingSecret = try context.secret(&reader, key: "signingSecret", minimumBytes: 32)
        if let seconds = try reader.integer("accessTokenLifetimeSeconds", in: 60...86_400) {
            accessTokenLifetimeSeconds = seconds
        }
        if let seconds = try reader.integer("refreshTokenLifetimeSeconds", in: 300...(5 * 365 * 86_400)) {
            refreshTokenLifetimeSeconds = seconds
        }
        if let flag = try reader.bool("rotateRefreshTokens") { rotateRefreshTokens = flag }
        if let flag = try reader.bool("developmentMode") { developmentMode = flag }
        if let schemaValue = reader.value("schema") {
            schema = try ConfigSchema(json: schemaValue, path: reader.path("schema"))
        }
        if var sinkReader = try reader.object("sink") {
            sink = try SinkConfiguration(reader: &sinkReader)
            try sinkReader.finish()
        }
        try reader.finish()
    }
}

extension AuthConfiguration {
    init(reader: inout ConfigReader, context: ParseContext) throws(ConfigError) {
        self.init()
        if let settings = try reader.object(AuthProvider.anonymous.rawValue) {
            try settings.finish()
            anonymous = AnonymousSettings()
        }
        if var settings = try reader.object(AuthProvider.userPassword.rawValue) {
            var value = UserPasswordSettings()
            if let length = try settings.integer("minPasswordLength", in: 6...1024) { value.minPasswordLength = Int(length) }
            if let logN = try settings.integer("scryptLogN", in: 10...20) { value.passwordHashing.logN = Int(logN) }
            if let r = try settings.integer("scryptR", in: 1...32) { value.passwordHashing.r = Int(r) }
            if let p = try settings.integer("scryptP", in: 1...16) { value.passwordHashing.p = Int(p) }
            if let count = try settings.integer("maxFailedLogins", in: 1...1000) { value.maxFailedLogins = Int(count) }
            if let seconds = try settings.integer("lockoutSeconds", in: 1...86_400) { value.lockoutSeconds = seconds }
            try settings.finish()
            userPassword = value
        }
        if let settings = try reader.object(AuthProvider.apiKey.rawValue) {
            try settings.finish()
            apiKey = APIKeySettings()
        }
        if var settings = try reader.object(AuthProvider.customToken.rawValue) {
            customToken = try CustomTokenSettings(reader: &settings, context: context)
            try settings.finish()
        }
    }
}

extension CustomTokenSettings {
    init(reader: inout ConfigReader, context: ParseContext) throws(ConfigError) {
        guard let keyValues = try reader.array("keys"), !keyValues.isEmpty else {
            throw ConfigError(
                .missingField, path: reader.path("keys"),
                "declare at least one key: {\"algorithm\": \"RS256\", \"publicKeyFile\": \"issuer.pem\"} "
                    + "or {\"algorithm\": \"HS256\", \"secretEnv\": \"VAR\"}")
        }
        var keys: [Key] = []
        for (index, keyValue) in keyValues.enumerated() {
            var keyReader = try ConfigReader(keyValue, path: reader.path("keys") + "[\(index)]")
            keys.append(try Key(reader: &keyReader, context: context))
            try keyReader.finish()
        }
        self.init(keys: keys)
        if let audienceValue = reader.value("audience") {
            switch audienceValue {
            case .string(let text): audience = [text]
            case .array(let items):
                for (index, item) in items.enumerated() {
                    guard let text = item.stringValue else {
                        throw ConfigError(
                            .wrongType, path: reader.path("audience") + "[\(index)]",
                            "expected a string, found \(item.kindDescription)")
                    }
                    audience.append(text)
                }
            default:
                throw ConfigError(
                    .wrongType, path: reader.path("audience"),
                    "expected a string or an array of strings, found \(audienceValue.kindDescription)")
            }
        }
        issuer = try reader.string("issuer")
        if let seconds = try reader.integer("leewaySeconds", in: 0...600) { leewaySeconds = seconds }
        if let seconds = try reader.integer("maxLifetimeSeconds", in: 60...(30 * 86_400)) { maxLifetimeSeconds = seconds }
    }
}

extension CustomTokenSettings.Key {
    init(reader: inout ConfigReader, context: ParseContext) throws(ConfigError) {
        let algorithm = try reader.requiredString("algorithm")
        let keyId = try reader.string("kid")
        switch algorithm {
        case "HS256":
            guard let secret = try context.secret(&reader, key: "secret", minimumBytes: 32) else {
                throw ConfigError(.missingField, path: reader.path("secret"), "an HS256 key needs secret or secretEnv")
            }
            self.init(material: .hs256(secret: secret), keyId: keyId)
        case "RS256":
            let inline = try reader.string("publicKey")
            let file = try reader.string("publicKeyFile")
            let pem: String
            let pemPath: String
            switch (inline, file) {
            case (.some(let text), nil):
                pem = text
                pemPath = reader.path("publicKey")
            case (nil, .some(let file)):
                let resolved = context.resolve(file)
                guard let text = try? String(contentsOfFile: resolved, encoding: .utf8) else {
                    throw ConfigError(.invalidValue, path: reader.path("publicKeyFile"), "cannot read \(resolved)")
                }
                pem = text
                pemPath = reader.path("publicKeyFile")
            case (.some, .some):
                throw ConfigError(
                    .invalidValue, path: reader.path("publicKeyFile"),
                    "set either publicKey or publicKeyFile, not both")
            case (nil, nil):
                throw ConfigError(
                    .missingField, path: reader.path("publicKey"),
                    "an RS256 key needs publicKey (PEM text) or publicKeyFile")
            }
            do {
                self.init(material: .rs256(try RSAPublicKey(pem: pem)), keyId: keyId)
            } catch {
                throw ConfigError(.invalidValue, path: pemPath, error.message)
            }
        default:
            throw ConfigError(
                .invalidValue, path: reader.path("algorithm"),
                "unsupported algorithm \"\(algorithm)\"; use HS256 or RS256")
        }
    }
}

extension SinkConfiguration {
    init(reader: inout ConfigReader) throws(ConfigError) {
        let kind = try reader.requiredString("kind")
        switch kind {
        case "sqlite":
            let path = try reader.requiredString("path")
            guard !path.isEmpty else { throw ConfigError(.invalidValue, path: reader.path("path"), "the path must not be empty") }
            self = .sqlite(path: path)
        case "postgres":
            self = .postgres(connection: try reader.requiredString("connection"))
        case "clickhouse":
            let url = try reader.requiredString("url")
            guard url.hasPrefix("http://") || url.hasPrefix("https://") else {
                throw ConfigError(.invalidValue, path: reader.path("url"), "expected an http:// or https:// URL")
            }
            let database = try reader.string("database") ?? "default"
            // Optional cluster (ClickHouse sink, Sinks/ClickHouseSink.swift): the
            // shards the sink creates local tables on, behind Distributed tables.
            var cluster: ClickHouseSink.Cluster?
            if var clusterReader = try reader.object("cluster") {
                let name = try clusterReader.requiredString("name")
                var shards: [ClickHouseSink.Cluster.Shard] = []
                for (index, item) in (try clusterReader.array("shards") ?? []).enumerated() {
                    var shardReader = try ConfigReader(item, path: clusterReader.path("shards") + "[\(index)]")
                    shards.append(.init(url: try shardReader.requiredString("url"), database: try shardReader.requiredString("database")))
                    try shardReader.finish()
                }
                guard !shards.isEmpty else {
                    throw ConfigError(.invalidValue, path: clusterReader.path("shards"), "a cluster needs at least one shard")
                }
                try clusterReader.finish()
                cluster = ClickHouseSink.Cluster(name: name, shards: shards)
            }
            self = .clickhouse(url: url, database: database, cluster: cluster)
        default:
            throw ConfigError(
                .invalidValue, path: reader.path("kind"),
                "unknown sink kind \"\(kind)\"; use sqlite, postgres or clickhouse")
        }
    }
}

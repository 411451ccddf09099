import Foundation
import IngestSupport
import Testing
@testable import IngestServer
import IngestTestSupport

@Suite struct AppsConfigurationTests {
    static let example = #"""
        {
          "host": "0.0.0.0",
          "port": 9191,
          "stateDirectory": "/var/lib/ingest",
          "limits": { "maxBodyBytes": 1048576, "maxConnections": 64, "keepAliveTimeoutSeconds": 2.5 },
          "apps": [
            {
              "id": "weather-abcde",
              "signingSecretEnv": "WEATHER_SECRET",
              "accessTokenLifetimeSeconds": 900,
              "refreshTokenLifetimeSeconds": 86400,
              "rotateRefreshTokens": true,
              "auth": {
                "anon-user": {},
                "local-userpass": { "minPasswordLength": 12, "scryptLogN": 14 },
                "api-key": {},
                "custom-token": {
                  "audience": ["weather"],
                  "issuer": "https://issuer.example",
                  "keys": [{ "algorithm": "HS256", "secretEnv": "ISSUER_SECRET", "kid": "2026" }]
                }
              },
              "schema": {
                "WeatherSensor": {
                  "kind": "asymmetric",
                  "properties": {
                    "_id": "objectId",
                    "deviceId": "string",
                    "temperature": "double?",
                    "tags": "string<>",
                    "counters": "int{}",
                    "readings": "Reading[]",
                    "location": { "type": "Location", "optional": true }
                  }
                },
                "Reading": { "kind": "embedded", "properties": { "at": "date", "value": "decimal128" } },
                "Location": { "kind": "embedded", "properties": { "lat": "double", "lon": "double" } }
              },
              "sink": { "kind": "postgres", "connection": "postgresql://ingest@127.0.0.1/weather" }
            },
            { "id": "logs", "developmentMode": true, "auth": { "anon-user": {} } }
          ]
        }
        """#

    let environment = [
        "WEATHER_SECRET": "weather-signing-secret-0123456789abcdef",
        "ISSUER_SECRET": "issuer-secret-0123456789abcdef-0123456789",
    ]

    func parse(_ json: String, environment: [String: String] = [:]) throws(ConfigError) -> ServerConfiguration {
        try ServerConfiguration(json: Array(json.utf8), environment: environment)
    }

    /// The error for `json`, which must fail.
    func failure(_ json: String, environment: [String: String] = [:]) -> ConfigError? {
        #expect(throws: ConfigError.self) { try parse(json, environment: environment) }
    }

    @Test func fullExampleParses() throws {
        let config = try parse(Self.example, environment: environment)
        #expect(config.host == "0.0.0.0" && config.port == 9191 && config.stateDirectory == "/var/lib/ingest")
        #expect(config.limits.maxBodyBytes == 1_048_576 && config.limits.maxConnections == 64)
        #expect(config.limits.maxHeaderBytes == ServerConfiguration.Limits().maxHeaderBytes)
        #expect(config.limits.keepAliveTimeoutSeconds == 2.5)
        let http = config.httpServerConfiguration
        #expect(http.host == "0.0.0.0" && http.port == 9191 && http.maxBodyBytes == 1_048_576)
        #expect(http.maxConnections == 64 && http.keepAliveTimeout == 2.5)
        #expect(config.apps.map(\.id) == ["weather-abcde", "logs"])

        let weather = try #require(config.app("weather-abcde"))
        #expect(weather.signingSecret == Array("weather-signing-secret-0123456789abcdef".utf8))
        #expect(weather.accessTokenLifetimeSeconds == 900 && weather.refreshTokenLifetimeSeconds == 86_400)
        #expect(weather.rotateRefreshTokens && !weather.developmentMode)
        #expect(weather.auth.enabledProviders == [.anonymous, .userPassword, .apiKey, .customToken])
        #expect(weather.auth.userPassword?.minPasswordLength == 12)
        #expect(weather.auth.userPassword?.passwordHashing.logN == 14)
        let custom = try #require(weather.auth.customToken)
        #expect(custom.audience == ["weather"] && custom.issuer == "https://issuer.example")
        #expect(custom.keys.count == 1 && custom.keys[0].algorithm == "HS256" && custom.keys[0].keyId == "2026")
        #expect(weather.sink == .postgres(connection: "postgresql://ingest@127.0.0.1/weather"))

        let schema = weather.schema
        #expect(schema.objectTypes.map(\.name) == ["WeatherSensor", "Reading", "Location"])
        #expect(schema.asymmetricTypes.map(\.name) == ["WeatherSensor"])
        let sensor = try #require(schema["WeatherSensor"])
        #expect(sensor.properties.map(\.name) == ["_id", "deviceId", "temperature", "tags", "counters", "readings", "location"])
        #expect(sensor[property: "_id"] == .init(name: "_id", type: .objectId))
        #expect(sensor[property: "temperature"] == .init(name: "temperature", type: .double, isOptional: true))
        #expect(sensor[property: "tags"] == .init(name: "tags", type: .string, collection: .set))
        #expect(sensor[property: "counters"] == .init(name: "counters", type: .int, collection: .map))
        #expect(sensor[property: "readings"] == .init(name: "readings", type: .object("Reading"), collection: .list))
        #expect(sensor[property: "location"] == .init(name: "location", type: .object("Location"), isOptional: true))
        #expect(schema["Reading"]?[property: "value"]?.type == .decimal128)

        let logs = try #require(config.app("logs"))
        #expect(logs.developmentMode && logs.signingSecret == nil)
        #expect(logs.auth.enabledProviders == [.anonymous])
        #expect(logs.accessTokenLifetimeSeconds == 1800 && logs.refreshTokenLifetimeSeconds == 60 * 86_400)
        #expect(logs.sink == .sqlite(path: "logs.sqlite"))
        #expect(config.sqliteSinkPath(for: logs) == "/var/lib/ingest/logs.sqlite")
    }

    @Test func minimalConfigurationUsesDocumentedDefaults() throws {
        let config = try parse(#"{"apps": [{"id": "a1"}]}"#)
        #expect(config.host == "127.0.0.1" && config.port == 9090 && config.stateDirectory == "./ingest-data")
        #expect(config.limits == ServerConfiguration.Limits())
        #expect(config.apps[0].auth.enabledProviders.isEmpty)
        #expect(config.stateDatabasePath == "./ingest-data/state.sqlite")
    }

    @Test func errorsNameTheFieldPath() {
        let cases: [(json: String, code: ConfigError.Code, path: String, mentions: String)] = [
            (#"{"apps": [{"id": "a1"}], "prot": 1}"#, .unknownKey, "prot", "port"),
            (#"{"apps": [{"id": "a1", "auth": {"anon-user": {"x": 1}}}]}"#, .unknownKey, "apps[0].auth.anon-user.x", "unknown key"),
            (#"{"apps": [{"id": "a1", "auth": {"google": {}}}]}"#, .unknownKey, "apps[0].auth.google", "custom-token"),
            (#"{"apps": [{"auth": {}}]}"#, .missingField, "apps[0].id", "required"),
            (#"{"port": 1}"#, .missingField, "apps", "at least one app"),
            (#"{"apps": []}"#, .invalidValue, "apps", "at least one app"),
            (#"{"port": "80", "apps": [{"id": "a1"}]}"#, .wrongType, "port", "integer"),
            (#"{"port": 70000, "apps": [{"id": "a1"}]}"#, .invalidValue, "port", "out of range"),
            (
                #"{"limits": {"headerTimeoutSeconds": 0}, "apps": [{"id": "a1"}]}"#, .invalidValue, "limits.headerTimeoutSeconds",
                "out of range"
            ),
            (#"{"limits": {"maxBodyBytes": 1.5}, "apps": [{"id": "a1"}]}"#, .wrongType, "limits.maxBodyBytes", "integer"),
            (#"{"apps": [{"id": "a b"}]}"#, .invalidValue, "apps[0].id", "A-Z"),
            (#"{"apps": [{"id": "a1"}, {"id": "a1"}]}"#, .invalidValue, "apps[1].id", "twice"),
            (#"{"apps": [{"id": "a1", "sink": {"kind": "mysql"}}]}"#, .invalidValue, "apps[0].sink.kind", "sqlite, postgres or clickhouse"),
            (#"{"apps": [{"id": "a1", "sink": {"kind": "sqlite"}}]}"#, .missingField, "apps[0].sink.path", "required"),
            (#"{"apps": [{"id": "a1", "developmentMode": "yes"}]}"#, .wrongType, "apps[0].developmentMode", "true or false"),
            (#"{"apps": [{"id": "a1", "signingSecret": "short"}]}"#, .invalidValue, "apps[0].signingSecret", "at least 32"),
            (
                #"{"apps": [{"id": "a1", "signingSecretEnv": "NOT_SET_ANYWHERE"}]}"#, .invalidValue, "apps[0].signingSecretEnv",
                "NOT_SET_ANYWHERE"
            ),
            (
                #"{"apps": [{"id": "a1", "auth": {"custom-token": {}}}]}"#, .missingField, "apps[0].auth.custom-token.keys",
                "at least one key"
            ),
            (
                #"{"apps": [{"id": "a1", "auth": {"custom-token": {"keys": [{"algorithm": "HS512"}]}}}]}"#,
                .invalidValue, "apps[0].auth.custom-token.keys[0].algorithm", "HS256 or RS256"
            ),
            (
                #"{"apps": [{"id": "a1", "auth": {"custom-token": {"keys": [{"algorithm": "RS256", "publicKey": "nope"}]}}}]}"#,
                .invalidValue, "apps[0].auth.custom-token.keys[0].publicKey", "PEM"
            ),
            (
                #"{"apps": [{"id": "a1", "auth": {"custom-token": {"keys": [{"algorithm": "RS256", "publicKeyFile": "/nonexistent.pem"}]}}}]}"#,
                .invalidValue, "apps[0].auth.custom-token.keys[0].publicKeyFile", "cannot read"
            ),
            (
                #"{"apps": [{"id": "a1", "auth": {"local-userpass": {"minPasswordLength": 2}}}]}"#,
                .invalidValue, "apps[0].auth.local-userpass.minPasswordLength", "out of range"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"S": {"kind": "asymmetric", "properties": {"x": "int"}}}}]}"#,
                .missingField, "apps[0].schema.S.properties._id", "_id"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"S": {"kind": "asymmetric", "properties": {"_id": "double"}}}}]}"#,
                .invalidValue, "apps[0].schema.S.properties._id", "objectId"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"S": {"kind": "table", "properties": {}}}}]}"#,
                .invalidValue, "apps[0].schema.S.kind", "asymmetric or embedded"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"S": {"kind": "asymmetric", "properties": {"_id": "objectId", "t": "temperature"}}}}]}"#,
                .invalidValue, "apps[0].schema.S.properties.t", "unknown type"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"S": {"kind": "asymmetric", "properties": {"_id": "objectId", "e": "Missing"}}}}]}"#,
                .invalidValue, "apps[0].schema.S.properties.e", "does not declare"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"A": {"kind": "asymmetric", "properties": {"_id": "objectId"}}, "B": {"kind": "asymmetric", "properties": {"_id": "objectId", "a": "A?"}}}}]}"#,
                .invalidValue, "apps[0].schema.B.properties.a", "asymmetric"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"E": {"kind": "embedded", "properties": {"self": "E"}}}}]}"#,
                .invalidValue, "apps[0].schema.E", "requires itself"
            ),
            (
                #"{"apps": [{"id": "a1", "schema": {"S": {"kind": "asymmetric", "properties": {"_id": "objectId", "x": {"type": "int", "nullable": true}}}}}]}"#,
                .unknownKey, "apps[0].schema.S.properties.x.nullable", "optional"
            ),
        ]
        for item in cases {
            let error = failure(item.json, environment: [:])
            #expect(error?.code == item.code, "\(item.json)")
            #expect(error?.path == item.path, "\(item.json)")
            #expect(error?.description.contains(item.mentions) == true, "\(String(describing: error)) should mention \(item.mentions)")
        }
    }

    @Test func syntaxErrorsGiveLineAndColumn() {
        let error = failure("{\n  \"apps\": [\n    {\"id\": \"a1\",}\n  ]\n}")
        #expect(error?.code == .syntax)
        #expect(error?.description.contains("line 3") == true)
        let duplicate = failure(#"{"apps": [{"id": "a1"}], "apps": []}"#)
        #expect(duplicate?.code == .syntax && duplicate?.description.contains("duplicate key \"apps\"") == true)
        #expect(failure("")?.code == .syntax)
        #expect(failure(#"{"apps": [{"id": "a1"}]} trailing"#)?.code == .syntax)
    }

    @Test func fileErrorsNameTheFileAndPublicKeyPathsAreRelative() throws {
        let directory = try TemporaryDirectory("auth")
        let missing = #expect(throws: ConfigError.self) {
            try ServerConfiguration(contentsOfFile: directory.path("absent.json"), environment: [:])
        }
        #expect(missing?.code == .unreadable && missing?.file == directory.path("absent.json"))

        let configPath = directory.path("ingest.json")
        try Data(#"{"apps": [{"id": "a1", "sinks": {}}]}"#.utf8).write(to: URL(fileURLWithPath: configPath))
        let unknown = #expect(throws: ConfigError.self) { try ServerConfiguration(contentsOfFile: configPath, environment: [:]) }
        #expect(unknown?.description.hasPrefix("\(configPath): apps[0].sinks: unknown key") == true)

        guard let key = try TestEnvironment.require(TestRSAKey(in: directory), "the openssl command line tool") else { return }
        try Data(key.publicPEM.utf8).write(to: URL(fileURLWithPath: directory.path("issuer.pub.pem")))
        try Data(
            #"""
            {"apps": [{"id": "a1", "auth": {"custom-token": {"keys": [{"algorithm": "RS256", "publicKeyFile": "issuer.pub.pem"}]}}}]}
            """#.utf8
        ).write(to: URL(fileURLWithPath: configPath))
        let config = try ServerConfiguration(contentsOfFile: configPath, environment: [:])
        #expect(config.apps[0].auth.customToken?.keys.first?.algorithm == "RS256")
    }

    @Test func developmentConfigurationKeepsItsAppId() throws {
        let directory = try TemporaryDirectory("auth")
        let state = directory.path("ingest-data")
        let first = try ServerConfiguration.development(stateDirectory: state)
        let second = try ServerConfiguration.development(stateDirectory: state)
        #expect(first.apps.count == 1)
        let app = first.apps[0]
        #expect(app.id.hasPrefix("dev-") && app.id.count == 12 && AppConfiguration.isValidId(app.id))
        #expect(second.apps[0].id == app.id)
        #expect(app.developmentMode && app.auth.enabledProviders == [.anonymous])
        #expect(first.sqliteSinkPath(for: app) == "\(state)/\(app.id).sqlite")
        // The development app's secret is generated once and persisted.
        let auth = try AuthService(configuration: first)
        let login = try auth.login(appId: app.id, provider: "anon-user", body: [])
        auth.store.close()
        let restarted = try AuthService(configuration: second)
        #expect(try restarted.verifyAccessToken(login.accessToken, appId: app.id).userId == login.userId)
    }
}

// ingest-forward: forwards lines from a file (following it like `tail -F`)
// or standard input to an ingest server, as ForwardedLine objects.
#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import IngestCommandLine
import Synchronization

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("ingest-forward: \(message)\n".utf8))
    exit(status)
}

// MARK: - Command line

let options = ForwardOptions.parseOrExitWithUsageStatus()
// The configuration file, if any; a flag given wins over it.
var config = ForwardConfig()
if let path = options.config {
    do {
        config = try ForwardConfig(contentsOfFile: path)
    } catch {
        fail("\(error)", 2)
    }
}
let appId = options.appId ?? config.appId ?? ProcessInfo.processInfo.environment["DATAINGEST_APP_ID"] ?? ""
if appId.isEmpty {
    fail("no app id: pass --app-id (ingest-server prints it), set server.appId in --config or DATAINGEST_APP_ID", 2)
}
let baseURL = options.baseURL ?? config.baseURL
let dataDirectory =
    options.dataDirectoryOption ?? config.dataDirectory ?? FileManager.default.currentDirectoryPath + "/ingest-forward-data"
let uploadTimeout = options.uploadTimeout ?? config.uploadTimeout ?? 60
let quiet = options.quiet
var settings = ForwardSettings()
settings.format = options.format ?? .plain
settings.batchLines = options.batchLines ?? config.batchLines ?? settings.batchLines
settings.fingerprintBytes = options.fingerprintBytes ?? config.fingerprintBytes ?? settings.fingerprintBytes
settings.maxOpenFiles = options.maxOpenFiles ?? config.maxOpenFiles ?? settings.maxOpenFiles
settings.gzip = options.gzip ?? config.gzip ?? settings.gzip
settings.once = options.once
settings.quiet = quiet
settings.maxPendingBytes = options.maxPendingBytes ?? config.maxPendingBytes ?? settings.maxPendingBytes
settings.poll = options.poll || (config.poll ?? false)
settings.scanInterval = options.scanInterval ?? config.scanInterval ?? settings.scanInterval
let maxRetryDelay = options.maxRetryDelay ?? config.maxRetryDelay ?? 60
// (validate() has checked that the patterns compile.)
let multiline: Multiline? =
    options.multilineStart.flatMap { try? NSRegularExpression(pattern: $0) }.map(Multiline.start)
    ?? options.multilineContinue.flatMap { try? NSRegularExpression(pattern: $0) }.map(Multiline.continuation)
settings.multiline = multiline
settings.multilineMaxBytes = options.multilineMaxBytes ?? settings.multilineMaxBytes
settings.multilineTimeout = options.multilineTimeout ?? settings.multilineTimeout
/// FILE arguments replace the file's sources; without them the file's
/// sources are followed, each flag for formats and multiline given
/// overriding what every source says.
var sources: [SourceRule] = []
if options.inputs == ["-"] {
    // Standard input: no sources.
} else if !options.inputs.isEmpty {
    sources = [
        SourceRule(
            patterns: options.inputs.map(PathPattern.init), format: settings.format, multiline: settings.multiline,
            multilineMaxBytes: settings.multilineMaxBytes, multilineTimeout: settings.multilineTimeout)
    ]
} else {
    sources = config.sources
    if sources.isEmpty { fail("no input: \(options.config ?? "the configuration file") has no sources, and no FILE was given", 2) }
    for index in sources.indices {
        if let format = options.format { sources[index].format = format }
        if let multiline { sources[index].multiline = multiline }
        if let bytes = options.multilineMaxBytes { sources[index].multilineMaxBytes = bytes }
        if let timeout = options.multilineTimeout { sources[index].multilineTimeout = timeout }
    }
}

// MARK: - Signals: stop cleanly

/// The first stop signal received (0: none yet).
let stopSignal = Atomic<Int32>(0)
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
var signalSources: [DispatchSourceSignal] = []
for signo in [SIGINT, SIGTERM] {
    let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
    source.setEventHandler { _ = stopSignal.compareExchange(expected: 0, desired: signo, ordering: .relaxed) }
    source.resume()
    signalSources.append(source)
}

// MARK: - Connect

do {
    try FileManager.default.createDirectory(atPath: dataDirectory, withIntermediateDirectories: true)
} catch {
    fail("cannot create \(dataDirectory): \(error.localizedDescription)", 1)
}
var appConfiguration = App.Configuration(baseURL: baseURL, metadataDirectory: dataDirectory + "/dataingest")
// A full store blocks the forwarder (it stops reading), never drops lines.
appConfiguration.segmentStore.maxPendingBytes = settings.maxPendingBytes
appConfiguration.segmentStore.budgetPolicy = .block(milliseconds: 1_000)
let metricsFile = (options.metricsFile ?? config.metricsFile).map(MetricsFile.init(path:))
// The SDK's store and session metrics go to the same file.
appConfiguration.metricsFactory = metricsFile
appConfiguration.sync.maximumBackoff = maxRetryDelay
appConfiguration.sync.initialBackoff = min(appConfiguration.sync.initialBackoff, maxRetryDelay)
let app = App(id: appId, configuration: appConfiguration)
let user: User
let realm: Realm
do {
    user = try await app.login(credentials: config.credentials ?? .anonymous)
    var configuration = user.flexibleSyncConfiguration()
    configuration.objectTypes = [ForwardedLine.self]
    realm = try Realm(configuration: configuration)
} catch {
    fail("could not connect to \(app.configuration.baseURL) as app \(appId): \(error)", 1)
}

let forwarder = Forwarder(
    realm: realm, session: user.session, settings: settings, metricsFile: metricsFile,
    shouldStop: { stopSignal.load(ordering: .relaxed) != 0 })
do {
    if options.inputs == ["-"] {
        try forwarder.forwardStandardInput()
    } else {
        try forwarder.follow(sources: sources)
    }
} catch {
    forwarder.endProgress()
    fail("\(error)", 1)
}
forwarder.endProgress()
var status: Int32 = stopSignal.load(ordering: .relaxed) == SIGINT ? 130 : 0
do {
    try await user.session.wait(for: .upload, timeout: uploadTimeout)
} catch {
    FileHandle.standardError.write(
        Data(
            "ingest-forward: not everything was uploaded within \(uploadTimeout) s (\(error)); it stays in \(dataDirectory) and is uploaded at the next start\n"
                .utf8))
    status = 1
}
forwarder.reportMetrics(force: true)
if !quiet { forwarder.printSummary() }
fflush(nil)
exit(status)

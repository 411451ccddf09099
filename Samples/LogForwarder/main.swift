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
let appId = options.server.appId
let baseURL = options.server.baseURL
let dataDirectory = options.dataDirectory
let uploadTimeout = options.uploadTimeout
let quiet = options.quiet
var settings = ForwardSettings()
settings.format = options.format
settings.batchLines = options.batchLines
settings.fingerprintBytes = options.fingerprintBytes
settings.maxOpenFiles = options.maxOpenFiles
settings.gzip = options.gzip
settings.once = options.once
settings.quiet = quiet
settings.maxPendingBytes = options.maxPendingBytes
// (validate() has checked that the patterns compile.)
if let pattern = options.multilineStart, let regex = try? NSRegularExpression(pattern: pattern) { settings.multiline = .start(regex) }
if let pattern = options.multilineContinue, let regex = try? NSRegularExpression(pattern: pattern) {
    settings.multiline = .continuation(regex)
}
settings.multilineMaxBytes = options.multilineMaxBytes
settings.multilineTimeout = options.multilineTimeout

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
appConfiguration.segmentStore.maxPendingBytes = options.maxPendingBytes
appConfiguration.segmentStore.budgetPolicy = .block(milliseconds: 1_000)
appConfiguration.sync.maximumBackoff = options.maxRetryDelay
appConfiguration.sync.initialBackoff = min(appConfiguration.sync.initialBackoff, options.maxRetryDelay)
let app = App(id: appId, configuration: appConfiguration)
let user: User
let realm: Realm
do {
    user = try await app.login(credentials: .anonymous)
    var configuration = user.flexibleSyncConfiguration()
    configuration.objectTypes = [ForwardedLine.self]
    realm = try Realm(configuration: configuration)
} catch {
    fail("could not connect to \(app.configuration.baseURL) as app \(appId): \(error)", 1)
}

let forwarder = Forwarder(
    realm: realm, session: user.session, settings: settings,
    shouldStop: { stopSignal.load(ordering: .relaxed) != 0 })
do {
    if options.inputs == ["-"] {
        try forwarder.forwardStandardInput()
    } else {
        try forwarder.follow(patterns: options.inputs)
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
if !quiet { forwarder.printSummary() }
fflush(nil)
exit(status)

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
let format = options.format
let dataDirectory = options.dataDirectory
let once = options.once
let batchLines = options.batchLines
let uploadTimeout = options.uploadTimeout
let quiet = options.quiet
let input = options.input ?? "-"

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
let app = App(id: appId, configuration: App.Configuration(baseURL: baseURL, metadataDirectory: dataDirectory + "/dataingest"))
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

let forwarder = Forwarder(realm: realm, session: user.session, format: format, batchLines: batchLines,
                          checkpointFile: dataDirectory + "/checkpoint.json", quiet: quiet,
                          shouldStop: { stopSignal.load(ordering: .relaxed) != 0 })
do {
    if input == "-" {
        try forwarder.forwardStandardInput()
    } else {
        try forwarder.follow(path: input, once: once)
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
    FileHandle.standardError.write(Data("ingest-forward: not everything was uploaded within \(uploadTimeout) s (\(error)); it stays in \(dataDirectory) and is uploaded at the next start\n".utf8))
    status = 1
}
if !quiet { forwarder.printSummary() }
fflush(nil)
exit(status)

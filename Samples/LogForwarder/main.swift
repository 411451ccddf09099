// ingest-forward: forwards lines from a file (following it like `tail -F`)
// or standard input to an ingest server, as ForwardedLine objects.
#if canImport(Glibc)
import Glibc
#endif
import DataIngest
import Foundation
import IngestSupport

let usage = """
    usage: ingest-forward [options] FILE
           ingest-forward [options] -          (standard input)

    Forwards each line to an ingest server as a ForwardedLine object. A FILE is followed
    like `tail -F`: appended lines are read as they come, a rotated file (renamed, a new
    one created) is read to its end before the new one is opened, and a truncated file is
    read again from its start. The position is checkpointed after every committed batch,
    so a restart resumes where the last one stopped: nothing lost, nothing twice.

    options:
      --app-id ID          the app id (default: $DATAINGEST_APP_ID)
      --base-url URL       the server (default: $DATAINGEST_BASE_URL or http://127.0.0.1:9090)
      --format F           plain (default), json (JSON lines) or syslog (RFC 5424 or 3164)
      --data-dir DIR       checkpoint, users and pending data (default ./ingest-forward-data)
      --once               stop at the end of the file instead of following it
      --batch-lines N      the most lines per transaction (default 1000)
      --upload-timeout S   how long to wait for the upload at exit (default 60)
      --quiet              no progress line and no summary
      -h, --help           this text

    A progress line (lines/s, pending, uploaded) is shown on standard error when it is a
    terminal; a summary is printed at exit.

    exit status: 0 done (end of input with --once or standard input, or SIGTERM), 1 error,
                 2 usage error, 130 interrupted (SIGINT) after a clean stop
    """

func fail(_ message: String, _ status: Int32) -> Never {
    FileHandle.standardError.write(Data("ingest-forward: \(message)\n".utf8))
    exit(status)
}

// MARK: - Command line

var appId = ProcessInfo.processInfo.environment["DATAINGEST_APP_ID"]
var baseURL: URL?
var format = LineFormat.plain
var dataDirectory = FileManager.default.currentDirectoryPath + "/ingest-forward-data"
var once = false
var batchLines = 1_000
var uploadTimeout = 60.0
var quiet = false
var input: String?
do {
    let arguments = Array(CommandLine.arguments.dropFirst())
    var index = 0
    func value() -> String {
        index += 1
        guard index < arguments.count else { fail("\(arguments[index - 1]) needs a value (try --help)", 2) }
        return arguments[index]
    }
    while index < arguments.count {
        let argument = arguments[index]
        switch argument {
        case "-h", "--help":
            print(usage)
            exit(0)
        case "--app-id": appId = value()
        case "--base-url":
            let text = value()
            guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https" else { fail("--base-url needs an http(s) URL, not '\(text)'", 2) }
            baseURL = url
        case "--format":
            let text = value()
            guard let parsed = LineFormat(rawValue: text) else { fail("--format must be plain, json or syslog, not '\(text)'", 2) }
            format = parsed
        case "--data-dir": dataDirectory = value()
        case "--once": once = true
        case "--batch-lines":
            let text = value()
            guard let n = Int(text), n > 0 else { fail("--batch-lines needs a positive number, not '\(text)'", 2) }
            batchLines = n
        case "--upload-timeout":
            let text = value()
            guard let n = Double(text), n > 0 else { fail("--upload-timeout needs seconds, not '\(text)'", 2) }
            uploadTimeout = n
        case "--quiet": quiet = true
        default:
            if argument.hasPrefix("-") && argument != "-" { fail("unknown option '\(argument)' (try --help)", 2) }
            guard input == nil else { fail("only one input: '\(input!)' and '\(argument)' (try --help)", 2) }
            input = argument
        }
        index += 1
    }
}
guard let input else { fail("no input: give a FILE or - for standard input (try --help)", 2) }
guard let appId, !appId.isEmpty else { fail("no app id: pass --app-id (ingest-server prints it) or set DATAINGEST_APP_ID", 2) }

// MARK: - Signals: stop cleanly

let stopSignal = LockedBox<Int32>(0)
signal(SIGINT, SIG_IGN)
signal(SIGTERM, SIG_IGN)
signal(SIGPIPE, SIG_IGN)
var signalSources: [DispatchSourceSignal] = []
for signo in [SIGINT, SIGTERM] {
    let source = DispatchSource.makeSignalSource(signal: signo, queue: .global())
    source.setEventHandler { stopSignal.withLock { if $0 == 0 { $0 = signo } } }
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
                          shouldStop: { stopSignal.withLock { $0 } != 0 })
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
var status: Int32 = stopSignal.withLock { $0 } == SIGINT ? 130 : 0
do {
    try await user.session.wait(for: .upload, timeout: uploadTimeout)
} catch {
    FileHandle.standardError.write(Data("ingest-forward: not everything was uploaded within \(uploadTimeout) s (\(error)); it stays in \(dataDirectory) and is uploaded at the next start\n".utf8))
    status = 1
}
if !quiet { forwarder.printSummary() }
fflush(nil)
exit(status)

// ingest-server: the DataIngest ingest server executable.
//
// For now it serves the HTTP layer's operational endpoints; apps, auth and
// uploads are registered on the same router as they land. See Docs/Server.md.
#if canImport(Glibc)
import Glibc
#endif
import IngestServer

let usage = """
    usage: ingest-server [options]

      --host ADDRESS              bind address (default 127.0.0.1)
      --port N                    TCP port, 0 for an ephemeral one (default 9090)
      --workers N                 handler threads (default 4)
      --max-connections N         open connections before 503 (default 1024)
      --max-header-bytes N        request line + headers limit, 431 above (default 16384)
      --max-body-bytes N          request body limit, 413 above (default 67108864)
      --header-timeout SECONDS    time to send a request head (default 10)
      --body-timeout SECONDS      max stall while sending a body (default 30)
      --keep-alive-timeout SECONDS  idle time between requests (default 30)
      --write-timeout SECONDS     max stall while the client reads a response (default 30)
      --shutdown-grace SECONDS    time for in-flight requests on SIGTERM/SIGINT (default 10)
      --enable-test-routes        serve the /_test/ diagnostic routes (never in production)
      --help                      print this help

    """

/// Writes `text` to a file descriptor unbuffered, so tests and supervisors
/// reading a pipe see each line at once.
func emit(_ text: String, to fd: Int32 = 1) {
    var bytes = Array(text.utf8)
    var offset = 0
    while offset < bytes.count {
        let n = bytes.withUnsafeMutableBytes { write(fd, $0.baseAddress! + offset, $0.count - offset) }
        if n > 0 { offset += n } else if n < 0 && errno == EINTR { continue } else { return }
    }
}

func fail(_ message: String) -> Never {
    emit("ingest-server: \(message)\n\(usage)", to: 2)
    exit(2)
}

/// The parsed command line.
struct Options {
    var configuration = HTTPServerConfiguration()
    var testRoutes = false

    init(_ arguments: [String]) {
        var arguments = arguments[...]
        func value(_ flag: String) -> String {
            guard let v = arguments.popFirst() else { fail("\(flag) needs a value") }
            return v
        }
        func integer(_ flag: String, _ range: ClosedRange<Int>) -> Int {
            let text = value(flag)
            guard let n = Int(text), range.contains(n) else { fail("\(flag) must be an integer in \(range), not \(text)") }
            return n
        }
        func seconds(_ flag: String) -> Double {
            let text = value(flag)
            guard let s = Double(text), s > 0, s.isFinite else {
                fail("\(flag) must be a positive number of seconds, not \(text)")
            }
            return s
        }
        configuration.handleSignals = true
        configuration.logHandler = { message in emit("ingest-server: \(message)\n", to: 2) }
        while let argument = arguments.popFirst() {
            switch argument {
            case "--host": configuration.host = value(argument)
            case "--port": configuration.port = integer(argument, 0...65535)
            case "--workers": configuration.workerThreads = integer(argument, 1...256)
            case "--max-connections": configuration.maxConnections = integer(argument, 1...1_000_000)
            case "--max-header-bytes": configuration.maxHeaderBytes = integer(argument, 256...(1 << 24))
            case "--max-body-bytes": configuration.maxBodyBytes = integer(argument, 0...(1 << 40))
            case "--header-timeout": configuration.headerTimeout = seconds(argument)
            case "--body-timeout": configuration.bodyIdleTimeout = seconds(argument)
            case "--keep-alive-timeout": configuration.keepAliveTimeout = seconds(argument)
            case "--write-timeout": configuration.writeTimeout = seconds(argument)
            case "--shutdown-grace": configuration.shutdownGracePeriod = seconds(argument)
            case "--enable-test-routes": testRoutes = true
            case "--help", "-h":
                emit(usage)
                exit(0)
            default: fail("unknown option \(argument)")
            }
        }
    }
}

let options = Options(Array(CommandLine.arguments.dropFirst()))

var router = HTTPRouter()
router.addHealthRoute()
if options.testRoutes { router.addDiagnosticRoutes() }

let server = HTTPServer(configuration: options.configuration, router: router)
do {
    try server.start()
} catch {
    emit("ingest-server: \(error)\n", to: 2)
    exit(1)
}
emit("listening on \(server.url)\n")
do {
    try server.run()
} catch {
    emit("ingest-server: \(error)\n", to: 2)
    exit(1)
}
emit("stopped\n")
exit(0)

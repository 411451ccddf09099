import Foundation

/// Starts `executable` (built next to the tests) in `directory` as a client
/// of `server`'s app `appId` (`$APP_ID`, `$DATAINGEST_BASE_URL`; the metadata
/// directory is App.Configuration's default, the current directory), with
/// its standard output on the returned pipe. The caller stops it by PID.
func startClientChild(_ executable: String, _ arguments: [String], appId: String, server: SyncTestServer,
                      in directory: String) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: try builtExecutable(executable))
    process.arguments = arguments
    process.currentDirectoryURL = URL(fileURLWithPath: directory)
    var environment = ProcessInfo.processInfo.environment
    environment["APP_ID"] = appId
    environment["DATAINGEST_BASE_URL"] = server.baseURL.absoluteString
    environment["DATAINGEST_METADATA_DIRECTORY"] = nil
    process.environment = environment
    let out = Pipe()
    process.standardOutput = out
    try process.run()
    return (process, out)
}

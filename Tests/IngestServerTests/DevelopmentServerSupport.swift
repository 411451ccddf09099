import Foundation

extension IngestTestServer {
    /// The development server's app id (`<data>/development-app-id`), for a
    /// server started without a config.
    func developmentAppId() throws -> String {
        try String(contentsOfFile: dataPath + "/development-app-id", encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }
}

import IngestHTTP

extension ServerConfiguration {
    /// The HTTP server settings for this configuration: address, port and
    /// the connection, size and time limits. Observers and signal handling
    /// are left for the caller to set.
    ///
    /// ```swift
    /// var http = config.httpServerConfiguration
    /// http.handleSignals = true
    /// ```
    package var httpServerConfiguration: HTTPServerConfiguration {
        var http = HTTPServerConfiguration()
        http.host = host
        http.port = port
        http.workerThreads = limits.workerThreads
        http.maxConnections = limits.maxConnections
        http.maxHeaderBytes = limits.maxHeaderBytes
        http.maxHeaderCount = limits.maxHeaderCount
        http.maxBodyBytes = limits.maxBodyBytes
        http.headerTimeout = limits.headerTimeoutSeconds
        http.bodyIdleTimeout = limits.bodyIdleTimeoutSeconds
        http.keepAliveTimeout = limits.keepAliveTimeoutSeconds
        http.writeTimeout = limits.writeTimeoutSeconds
        http.shutdownGracePeriod = limits.shutdownGraceSeconds
        return http
    }
}

#if canImport(Glibc)
import Glibc
#endif
import Logging
import CLinux

/// Monotonic nanoseconds, for timeouts and latency.
func monotonicNanos() -> UInt64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
}

func nanos(_ seconds: Double) -> UInt64 { UInt64(max(0, seconds) * 1e9) }

extension HTTPServer {
    /// The loop: wait for events, handle them, sweep timeouts, repeat until drained.
    func eventLoop() throws {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        let shortest =
            [
                configuration.headerTimeout, configuration.bodyIdleTimeout,
                configuration.keepAliveTimeout, configuration.writeTimeout,
            ].min() ?? 1
        // Timeouts are checked by a sweep this often: a tenth of the shortest timeout.
        let sweepMillis = Int32(min(250, max(10, shortest * 100)))
        var nextSweep: UInt64 = 0
        now = monotonicNanos()
        if shared.withLock({ $0.shutdownRequested }) { beginShutdown() }
        while true {
            let idle = connections.isEmpty && !draining && listenerPausedUntil == nil
            let count = epoll_wait(epollFD, &events, Int32(events.count), idle ? -1 : sweepMillis)
            if count < 0 {
                if errno == EINTR { continue }
                throw HTTPServerError(.eventLoop, "epoll_wait failed.", errno: errno)
            }
            now = monotonicNanos()
            for i in 0..<Int(count) {
                let key = events[i].data.u64
                let flags = events[i].events
                switch key {
                case Self.listenerKey:
                    acceptConnections()
                case Self.wakeKey:
                    var value: UInt64 = 0
                    _ = withUnsafeMutableBytes(of: &value) { read(wakeFD, $0.baseAddress, 8) }
                    processCompletions()
                    if !draining && shared.withLock({ $0.shutdownRequested }) { beginShutdown() }
                case Self.signalKey:
                    if SignalPipe.drain(signalFD) > 0 {
                        if draining {
                            logger.notice("second signal: closing all connections now")
                            drainDeadline = now
                        } else {
                            logger.notice("signal received: shutting down gracefully")
                            beginShutdown()
                        }
                    }
                default:
                    guard let connection = connections[key] else { continue }
                    handle(connection, flags: flags)
                }
            }
            if now >= nextSweep {
                sweepTimeouts()
                nextSweep = now + UInt64(sweepMillis) * 1_000_000
            }
            if draining {
                let upgraded = upgradedConnections
                if (connections.isEmpty && upgraded.isEmpty) || now >= drainDeadline {
                    forcedStop = !connections.isEmpty || !upgraded.isEmpty
                    for connection in Array(connections.values) { closeConnection(connection) }
                    // Their sessions see end of input and return on their own threads.
                    for connection in upgraded { connection.forceShutdown() }
                    return
                }
            }
        }
    }

    // MARK: Accepting

    func acceptConnections() {
        for _ in 0..<64 {
            let fd = dataingest_accept4(listenFD, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
            if fd < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED: continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    // Out of descriptors: stop accepting briefly instead of spinning.
                    logger.warning("accept failed (errno \(errno)): pausing accepts for 100 ms")
                    pauseListener(until: now + 100_000_000)
                    return
                default:
                    logger.warning("accept failed (errno \(errno))")
                    return
                }
            }
            if draining {
                close(fd)
                continue
            }
            if connections.count >= configuration.maxConnections {
                rejectOverLimit(fd)
                continue
            }
            var yes: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
            let connection = HTTPConnection(id: nextConnectionID, fd: fd, limits: configuration.parserLimits, now: now)
            nextConnectionID += 1
            var event = epoll_event()
            event.events = dataingest_epollin()
            event.data = epoll_data_t(u64: connection.id)
            guard epoll_ctl(epollFD, EPOLL_CTL_ADD, fd, &event) == 0 else {
                logger.error("epoll_ctl(ADD) failed for a connection (errno \(errno))")
                close(fd)
                continue
            }
            connection.interest = event.events
            connections[connection.id] = connection
        }
    }

    /// Over the connection limit: a best-effort 503 and close, never blocking.
    private func rejectOverLimit(_ fd: Int32) {
        var bytes: [UInt8] = []
        let error = HTTPError(
            .serviceUnavailable, code: .unavailable,
            "The server has too many open connections; retry later.", headers: ["Retry-After": "1"])
        HTTPResponseWriter.write(
            error.httpResponse(), isHead: false, close: true, http10KeepAlive: false,
            date: httpDate(), into: &bytes)
        _ = bytes.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL) | Int32(MSG_DONTWAIT)) }
        close(fd)
        observe(
            HTTPRequestSummary(
                method: "", path: "", routePattern: nil, status: 503, durationSeconds: 0,
                requestBodyBytes: 0, responseBodyBytes: error.httpResponse().body.count))
    }

    private func pauseListener(until deadline: UInt64) {
        guard listenerPausedUntil == nil, listenFD >= 0 else { return }
        epoll_ctl(epollFD, EPOLL_CTL_DEL, listenFD, nil)
        listenerPausedUntil = deadline
    }

    func beginShutdown() {
        guard !draining else { return }
        draining = true
        drainDeadline = now + nanos(configuration.shutdownGracePeriod)
        if listenFD >= 0 {
            if listenerPausedUntil == nil { epoll_ctl(epollFD, EPOLL_CTL_DEL, listenFD, nil) }
            close(listenFD)
            listenFD = -1
        }
        listenerPausedUntil = nil
        // Upgraded connections are told, and given the grace period to end.
        for connection in upgradedConnections { connection.serverWillShutDown() }
        // Idle keep-alive connections close now; the rest after their response.
        for connection in Array(connections.values) {
            if !connection.inFlight && connection.outputPending == 0 && connection.parser.phase == .idle {
                closeConnection(connection)
            } else if !connection.inFlight && connection.outputPending == 0 && connection.lingering {
                closeConnection(connection)
            }
        }
    }

    // MARK: Connection events

    func handle(_ connection: HTTPConnection, flags: UInt32) {
        if flags & dataingest_epollerr() != 0 {
            closeConnection(connection)
            return
        }
        if flags & (dataingest_epollin() | dataingest_epollhup()) != 0 {
            if connection.lingering {
                discardInput(connection)
                return
            }
            if wantsRead(connection) {
                readInput(connection)
                guard connections[connection.id] != nil else { return }
            } else if flags & dataingest_epollhup() != 0 {
                // The peer is gone in both directions; no response can arrive.
                closeConnection(connection)
                return
            }
        }
        if flags & dataingest_epollout() != 0 {
            flush(connection)
            // Output fell below the high-water mark: parse requests already buffered.
            if connections[connection.id] != nil && !connection.inFlight && !connection.closeAfterFlush
                && !connection.lingering && connection.outputPending < Self.outputHighWater
                && connection.parser.hasBufferedBytes
            {
                drive(connection)
            }
        }
    }

    func wantsRead(_ connection: HTTPConnection) -> Bool {
        !connection.inFlight && !connection.closeAfterFlush && !connection.readEOF
            && connection.outputPending < Self.outputHighWater
    }

    private func readInput(_ connection: HTTPConnection) {
        for _ in 0..<4 {
            let n = recv(connection.fd, readBuffer.baseAddress, readBuffer.count, 0)
            if n > 0 {
                connection.parser.append(UnsafeRawBufferPointer(rebasing: readBuffer[0..<n]))
                connection.lastActivity = now
                if n < readBuffer.count { break }
            } else if n == 0 {
                connection.readEOF = true
                break
            } else {
                if errno == EINTR { continue }
                if errno == EAGAIN || errno == EWOULDBLOCK { break }
                closeConnection(connection)
                return
            }
        }
        drive(connection)
    }

    /// Parses and dispatches buffered requests until one is in flight, the
    /// buffer runs dry or the connection is closing; then sends what is queued.
    func drive(_ connection: HTTPConnection) {
        parsing: while !connection.inFlight && !connection.closeAfterFlush
            && connection.outputPending < Self.outputHighWater
        {
            switch connection.parser.next() {
            case .needMoreData:
                if connection.readEOF {
                    // The peer stopped sending; any partial request is abandoned.
                    connection.closeAfterFlush = true
                }
                break parsing
            case .expectContinue:
                connection.output.append(contentsOf: HTTPResponseWriter.continueBytes)
            case .request(let request, let keepAlive):
                dispatch(request, keepAlive: keepAlive, on: connection)
            case .error(let error):
                connection.current = HTTPConnection.CurrentRequest(started: now)
                connection.current.keepAlive = false
                queue(error.httpResponse(), on: connection)
            }
        }
        let phase = connection.parser.phase
        if phase == .head && connection.lastPhase != .head { connection.headStarted = now }
        connection.lastPhase = phase
        flush(connection)
    }

    /// Sends queued output without blocking; closes or lingers when done.
    func flush(_ connection: HTTPConnection) {
        while connection.outputPending > 0 {
            let n = connection.output.withUnsafeBytes {
                send(connection.fd, $0.baseAddress! + connection.outputIndex, connection.outputPending, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                connection.outputIndex += n
                connection.lastActivity = now
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                break
            } else {
                closeConnection(connection)
                return
            }
        }
        if connection.outputPending == 0 && !connection.output.isEmpty {
            if connection.output.capacity > 1 << 20 {
                connection.output = []
            } else {
                connection.output.removeAll(keepingCapacity: true)
            }
            connection.outputIndex = 0
        }
        if connection.outputPending == 0 && connection.closeAfterFlush && !connection.inFlight {
            if connection.readEOF {
                closeConnection(connection)
            } else {
                startLingering(connection)
            }
            return
        }
        updateInterest(connection)
    }

    /// Half-closes and drains input briefly before closing, so a client still
    /// sending (e.g. a body we refused) reads our response instead of a reset.
    private func startLingering(_ connection: HTTPConnection) {
        if draining && now >= drainDeadline {
            closeConnection(connection)
            return
        }
        _ = Glibc.shutdown(connection.fd, Int32(SHUT_WR))
        connection.lingering = true
        connection.lingerDeadline = now + 1_000_000_000
        updateInterest(connection)
    }

    private func discardInput(_ connection: HTTPConnection) {
        for _ in 0..<16 {
            let n = recv(connection.fd, readBuffer.baseAddress, readBuffer.count, 0)
            if n > 0 { continue }
            if n < 0 && errno == EINTR { continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) { return }
            break
        }
        closeConnection(connection)
    }

    func updateInterest(_ connection: HTTPConnection) {
        var wanted: UInt32 = 0
        if connection.lingering || wantsRead(connection) { wanted |= dataingest_epollin() }
        if connection.outputPending > 0 { wanted |= dataingest_epollout() }
        guard wanted != connection.interest else { return }
        var event = epoll_event()
        event.events = wanted
        event.data = epoll_data_t(u64: connection.id)
        if epoll_ctl(epollFD, EPOLL_CTL_MOD, connection.fd, &event) != 0 {
            closeConnection(connection)
            return
        }
        connection.interest = wanted
    }

    func closeConnection(_ connection: HTTPConnection) {
        guard connections.removeValue(forKey: connection.id) != nil else { return }
        epoll_ctl(epollFD, EPOLL_CTL_DEL, connection.fd, nil)
        close(connection.fd)
    }

    // MARK: Timeouts

    func sweepTimeouts() {
        if let until = listenerPausedUntil, now >= until, listenFD >= 0 {
            listenerPausedUntil = nil
            do { try register(listenFD, key: Self.listenerKey, events: dataingest_epollin()) } catch {
                logger.error("could not resume accepting: \(error)")
            }
        }
        for connection in Array(connections.values) {
            if connection.lingering {
                if now >= connection.lingerDeadline { closeConnection(connection) }
                continue
            }
            if connection.inFlight { continue }
            if connection.outputPending > 0 {
                if now >= connection.lastActivity + nanos(configuration.writeTimeout) { closeConnection(connection) }
                continue
            }
            switch connection.parser.phase {
            case .idle:
                let limit = connection.requestsServed == 0 ? configuration.headerTimeout : configuration.keepAliveTimeout
                if now >= connection.lastActivity + nanos(limit) { closeConnection(connection) }
            case .head:
                if now >= connection.headStarted + nanos(configuration.headerTimeout) { timeOut(connection) }
            case .body:
                if now >= connection.lastActivity + nanos(configuration.bodyIdleTimeout) { timeOut(connection) }
            }
        }
    }

    /// A partial request took too long: answer 408 (best effort) and close.
    private func timeOut(_ connection: HTTPConnection) {
        connection.current = HTTPConnection.CurrentRequest(started: now)
        connection.current.keepAlive = false
        queue(
            HTTPError(
                .requestTimeout, code: .requestTimeout,
                "The request was not received in time; the connection is closed."
            ).httpResponse(),
            on: connection)
        flush(connection)
        // A client that does not read gets no more time.
        if connections[connection.id] != nil && !connection.lingering { closeConnection(connection) }
    }

    // MARK: Helpers

    func httpDate() -> String {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        let second = Int(ts.tv_sec)
        if cachedDate.second != second {
            cachedDate = (second, HTTPResponseWriter.httpDate(epochSeconds: second))
        }
        return cachedDate.text
    }

    func observe(_ summary: HTTPRequestSummary) {
        configuration.requestObserver?(summary)
    }
}

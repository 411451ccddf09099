import IngestCore
import IngestSupport

/// Counts failed password logins per app and email and refuses further
/// attempts for a while once too many failed, against online guessing.
///
/// In memory only (a restart forgets it) and bounded: at most
/// ``maximumEntries`` identities are tracked; expired entries are pruned
/// first, then the oldest.
///
/// ```swift
/// let throttle = LoginThrottle(maxFailures: 10, lockoutSeconds: 900)
/// try throttle.check("app/ada@example.org", now: now)   // throws 429 when locked
/// throttle.recordFailure("app/ada@example.org", now: now)
/// ```
package final class LoginThrottle: Sendable {
    /// Failures allowed within ``lockoutSeconds`` before logins are refused.
    package let maxFailures: Int
    /// How long the failures are remembered and the lock lasts, in seconds.
    package let lockoutSeconds: Int64
    /// The most identities tracked at once.
    package let maximumEntries: Int

    private struct Entry {
        var failures: Int
        var firstFailure: Int64
    }

    private let entries = LockedBox([String: Entry]())

    package init(maxFailures: Int = 10, lockoutSeconds: Int64 = 900, maximumEntries: Int = 100_000) {
        self.maxFailures = maxFailures
        self.lockoutSeconds = lockoutSeconds
        self.maximumEntries = maximumEntries
    }

    /// Throws ``AuthError`` `.tooManyRequests` (429, with `retryAfterSeconds`)
    /// if `key` has reached ``maxFailures`` within the lockout window.
    package func check(_ key: String, now: Int64, appId: String? = nil) throws(AuthError) {
        let remaining: Int64? = entries.withLock { entries in
            guard let entry = entries[key] else { return nil }
            let end = entry.firstFailure + lockoutSeconds
            if now >= end {
                entries[key] = nil
                return nil
            }
            return entry.failures >= maxFailures ? end - now : nil
        }
        if let remaining {
            var error = AuthError(
                .tooManyRequests, "too many failed logins for this user; retry in \(remaining) s",
                appId: appId)
            error.retryAfterSeconds = Int(remaining)
            throw error
        }
    }

    /// Records one failed login for `key`.
    package func recordFailure(_ key: String, now: Int64) {
        entries.withLock { entries in
            if var entry = entries[key], now < entry.firstFailure + lockoutSeconds {
                entry.failures += 1
                entries[key] = entry
                return
            }
            if entries.count >= maximumEntries { prune(&entries, now: now) }
            entries[key] = Entry(failures: 1, firstFailure: now)
        }
    }

    /// Forgets `key`'s failures (after a successful login).
    package func recordSuccess(_ key: String) {
        _ = entries.withLock { $0.removeValue(forKey: key) }
    }

    private func prune(_ entries: inout [String: Entry], now: Int64) {
        entries = entries.filter { now < $0.value.firstFailure + lockoutSeconds }
        // Still full: drop the oldest quarter.
        if entries.count >= maximumEntries {
            let oldest = entries.sorted { $0.value.firstFailure < $1.value.firstFailure }.prefix(maximumEntries / 4 + 1)
            for (key, _) in oldest { entries[key] = nil }
        }
    }
}

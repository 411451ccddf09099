import IngestSupport

/// The store's one lock, with a condition per kind of waiter. Separate
/// conditions keep a commit from waking the background threads: with a
/// single condition every commit's broadcast woke the sealer and the syncer,
/// which then fought for the mutex.
typealias StoreMonitor = ConditionLock<StoreCondition>

/// What a thread of the store waits for.
enum StoreCondition: Int, CaseIterable {
    /// The commit leader finished a group (followers, and `flush` waiting for no leader).
    case leader
    /// Work for the sealer (a rotated segment, or stopping).
    case sealer
    /// Anything else: seals done, space freed, threads stopped, stopping.
    case state
}

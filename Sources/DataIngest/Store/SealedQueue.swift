import IngestCore

/// The sealed segments waiting for upload, oldest first, and their size on
/// disk: part of ``StoreState``, so changed only with the store's monitor
/// held. The sealer inserts, uploads acknowledge or reject, the
/// `dropOldest` budget policy removes the oldest.
struct SealedQueue {
    private(set) var segments: [PendingSegment] = []
    /// Bytes of all the files.
    private(set) var byteCount = 0

    init() {}

    /// The segments found by recovery, in any order.
    init(_ found: [PendingSegment]) {
        segments = found.sorted { $0.number < $1.number }
        byteCount = segments.reduce(0) { $0 + $1.byteCount }
    }

    var count: Int { segments.count }
    var isEmpty: Bool { segments.isEmpty }
    var recordCount: Int { segments.reduce(0) { $0 + $1.recordCount } }

    /// Pending segment `number`, if it is in the queue.
    func segment(_ number: UInt64) -> PendingSegment? {
        segments.first { $0.number == number }
    }

    /// Adds a newly sealed segment in number order.
    mutating func insert(_ segment: PendingSegment) {
        let index = segments.firstIndex { $0.number > segment.number } ?? segments.endIndex
        segments.insert(segment, at: index)
        byteCount += segment.byteCount
    }

    /// Takes segment `number` out of the queue (its file stays).
    @discardableResult
    mutating func remove(_ number: UInt64) -> PendingSegment? {
        guard let index = segments.firstIndex(where: { $0.number == number }) else { return nil }
        byteCount -= segments[index].byteCount
        return segments.remove(at: index)
    }

    /// Takes the oldest segment out of the queue (it must not be empty).
    mutating func removeOldest() -> PendingSegment {
        let segment = segments.removeFirst()
        byteCount -= segment.byteCount
        return segment
    }
}

/// The log writer's queue: pending events in chunks of ``chunkCapacity``,
/// whose memory is reused.
///
/// A caller appends to the last chunk; a full chunk is followed by an
/// emptied one from earlier batches, or a new one. The writer thread takes
/// all chunks at once (``take(into:)``), encodes their events, empties them
/// and hands them back (``recycle(_:)``). So once the queue has been as
/// deep as it is now, a caller writes into memory the process already has.
/// One growing array instead reallocated into fresh pages as it grew,
/// copied what it held each time, and gave memory back to the system when
/// freed: a caller then paid the page faults (Docs/Logging.md, session 14).
///
/// Not thread-safe: ``LogWriter`` guards it with its monitor.
struct LogEventQueue {
    /// Events per chunk (about 200 KiB of them).
    static let chunkCapacity = 512

    /// The queued events in order: every chunk but the last is full.
    private var chunks: [[PendingLogEvent]] = []
    /// Empty chunks (their capacity kept) for the next appends.
    private var spares: [[PendingLogEvent]] = []
    /// The number of queued events.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }
    /// Emptied chunks waiting to be reused.
    var spareChunks: Int { spares.count }

    mutating func append(_ event: consuming PendingLogEvent) {
        if chunks.isEmpty || chunks[chunks.count - 1].count == Self.chunkCapacity {
            chunks.append(spares.popLast() ?? Self.emptyChunk())
        }
        chunks[chunks.count - 1].append(event)
        count += 1
    }

    /// Moves every queued event's chunk to `batch` (which must be empty)
    /// and empties the queue.
    mutating func take(into batch: inout [[PendingLogEvent]]) {
        precondition(batch.isEmpty, "the writer's batch was not recycled")
        swap(&chunks, &batch)
        count = 0
    }

    /// Keeps `batch`'s chunks for reuse; each must have been emptied with
    /// `removeAll(keepingCapacity: true)`. Leaves `batch` empty.
    mutating func recycle(_ batch: inout [[PendingLogEvent]]) {
        spares.append(contentsOf: batch)
        batch.removeAll(keepingCapacity: true)
    }

    private static func emptyChunk() -> [PendingLogEvent] {
        var chunk: [PendingLogEvent] = []
        chunk.reserveCapacity(chunkCapacity)
        return chunk
    }
}

extension Array where Element == [PendingLogEvent] {
    /// The event at `position` of a batch taken from a ``LogEventQueue``
    /// (every chunk but the last full).
    subscript(position position: Int) -> PendingLogEvent {
        get { self[position / LogEventQueue.chunkCapacity][position % LogEventQueue.chunkCapacity] }
        _modify { yield &self[position / LogEventQueue.chunkCapacity][position % LogEventQueue.chunkCapacity] }
    }
}

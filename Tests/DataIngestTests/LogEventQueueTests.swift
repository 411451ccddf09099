import Testing

@testable import DataIngest

/// The log writer's queue: events come out in the order they went in across
/// chunk boundaries, and a second round of the same depth reuses the first
/// round's chunks instead of allocating new ones.
@Suite struct LogEventQueueTests {
    private static func event(_ number: Int) -> PendingLogEvent {
        PendingLogEvent(
            unixNanoseconds: Int64(number), level: .info, line: UInt(number), label: "queue",
            message: "event \(number)", loggerMetadata: nil, providedMetadata: nil, callMetadata: nil,
            source: nil, file: "Tests/LogEventQueueTests.swift", function: "event(_:)")
    }

    /// Each chunk's storage address.
    private static func addresses(_ batch: [[PendingLogEvent]]) -> Set<UInt> {
        Set(batch.map { chunk in chunk.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) } })
    }

    @Test func eventsComeOutInOrderAndChunksAreReused() {
        var queue = LogEventQueue()
        var batch: [[PendingLogEvent]] = []
        let depth = 2 * LogEventQueue.chunkCapacity + 37
        var firstRound: Set<UInt> = []
        for round in 0..<2 {
            #expect(queue.spareChunks == (round == 0 ? 0 : 3))
            for number in 0..<depth { queue.append(Self.event(round * depth + number)) }
            #expect(queue.count == depth)
            #expect(queue.spareChunks == 0)
            queue.take(into: &batch)
            #expect(queue.isEmpty)
            #expect(batch.count == 3)
            #expect(batch.dropLast().allSatisfy { $0.count == LogEventQueue.chunkCapacity })
            let lines = (0..<depth).map { Int(batch[position: $0].line) }
            #expect(lines == Array(round * depth..<(round + 1) * depth))
            if round == 0 {
                firstRound = Self.addresses(batch)
            } else {
                #expect(Self.addresses(batch) == firstRound)  // the same three chunks' memory
            }
            for chunk in batch.indices { batch[chunk].removeAll(keepingCapacity: true) }
            queue.recycle(&batch)
            #expect(batch.isEmpty)
        }
    }
}

// The guest side of the power-cut harness (Tests/DataIngestTests/PowerCutTests.swift):
//
//   store-crash-child power <directory> <full|interval|none> <first-id> <commits> [key-hex]
//
// Opens the store (recovering from the last power cut), reports what it
// found, then commits `commits` numbered transactions (0: none; -1: until the
// power is cut) while a second thread "uploads" every sealed segment: it
// reports the segment's transactions and acknowledges it (every fifth segment
// is rejected instead: its first record goes to quarantine). One line per
// event, each written with one write(2) to standard output (the guest's
// serial port):
//
//   B                      opening the store
//   O <quarantine reports> opened (recovery done)
//   Q <kind> <segment>     a quarantine report found at open
//   S <segment> <ranges>   a sealed segment's transactions, `a-b` or `a`, comma-separated
//   A <segment> / J <segment>   acknowledged / rejected (record 0 quarantined)
//   P <segment> <detail>   a partial or unreadable transaction (never expected)
//   C <id>                 transaction `id` committed (`commit` returned)
//   D                      all commits done and every segment uploaded
//   E <detail>             an error (the store failed to open, a commit failed)
import DataIngest
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One segment's transactions, checked whole; `P` lines for anything partial.
func powerUpload(_ store: SegmentStore, _ segment: PendingSegment, reject: Bool) throws {
    let reader = try store.reader(for: segment)
    var ids: [Int64] = []
    var current: [(Int64, Int32, Int32)] = []
    while let event = try reader.next() {
        switch event {
        case .record(let record):
            guard let parsed = parse(record.document) else {
                say("P \(segment.number) unreadable record \(record.index)\n")
                continue
            }
            current.append(parsed)
        case .commit:
            let id = current.first?.0 ?? -1
            let n = Int(id % 3 + 1)
            let whole =
                current.count == n
                && current.enumerated().allSatisfy {
                    $0.element.0 == id && $0.element.1 == Int32($0.offset) && $0.element.2 == Int32(n)
                }
            if !whole { say("P \(segment.number) transaction \(id) has \(current.count) of \(n) records\n") }
            ids.append(id)
            current.removeAll()
        case .end:
            if !current.isEmpty { say("P \(segment.number) \(current.count) records after the last commit\n") }
        }
    }
    var ranges: [String] = []
    var start = 0
    for i in ids.indices where i == ids.count - 1 || ids[i + 1] != ids[i] + 1 {
        ranges.append(start == i ? "\(ids[i])" : "\(ids[start])-\(ids[i])")
        start = i + 1
    }
    say("S \(segment.number) \(ranges.joined(separator: ","))\n")
    if reject {
        try store.reject(segment: segment.number, records: [0: "refused by the power-cut harness"])
        say("J \(segment.number)\n")
    } else {
        try store.acknowledge(segment: segment.number)
        say("A \(segment.number)\n")
    }
}

func parse(_ doc: [UInt8]) -> (Int64, Int32, Int32)? {
    guard doc.count == 30, doc[4] == 0x12, doc[5] == UInt8(ascii: "t"), doc[15] == 0x10, doc[22] == 0x10 else { return nil }
    return doc.withUnsafeBytes { raw in
        (
            Int64(littleEndian: raw.loadUnaligned(fromByteOffset: 7, as: Int64.self)),
            Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 18, as: Int32.self)),
            Int32(littleEndian: raw.loadUnaligned(fromByteOffset: 25, as: Int32.self))
        )
    }
}

let uploadLock = NSLock()

/// Uploads every pending segment once (oldest first).
func powerUploadPending(_ store: SegmentStore) throws {
    uploadLock.lock()
    defer { uploadLock.unlock() }
    for segment in store.pendingSegments() {
        try powerUpload(store, segment, reject: segment.number % 5 == 0)
    }
}

func powerMode(_ arguments: [String]) -> Never {
    var configuration = SegmentStore.Configuration(directory: arguments[2])
    configuration.maxSegmentBytes = 64 << 10
    configuration.maxSegmentAgeMilliseconds = 200
    switch arguments[3] {
    case "full": configuration.durability = .full
    case "none": configuration.durability = .none
    default: configuration.durability = .interval(milliseconds: 100)
    }
    if arguments.count > 6 {
        let digits = Array(arguments[6].utf8)
        configuration.encryptionKey = Data(
            stride(from: 0, to: digits.count - 1, by: 2).compactMap {
                UInt8(String(decoding: digits[$0...($0 + 1)], as: UTF8.self), radix: 16)
            })
    }
    let firstId = Int64(arguments[4]) ?? 0
    let commits = Int(arguments[5]) ?? 0
    say("B\n")
    let store: SegmentStore
    do {
        store = try SegmentStore.open(configuration)
    } catch {
        say("E open: \(error)\n")
        exit(1)
    }
    let reports = store.quarantineReports()
    say("O \(reports.count)\n")
    for report in reports { say("Q \(report.kind) \(report.segmentNumber)\n") }
    // The uploader: every 50 ms, every sealed segment.
    let uploader = Thread {
        while true {
            do {
                try powerUploadPending(store)
            } catch {
                say("E upload: \(error)\n")
            }
            usleep(50_000)
        }
    }
    uploader.start()
    var id = firstId
    var committed = 0
    while commits < 0 || committed < commits {
        let n = Int32(id % 3 + 1)
        do {
            try store.commit { tx in
                for k in 0..<n { try tx.append(collection: "Tx", document: document(id: id, k: k, n: n)) }
            }
        } catch {
            say("E commit \(id): \(error)\n")
            exit(1)
        }
        say("C \(id)\n")
        id += 1
        committed += 1
    }
    do {
        try store.flush()
        try powerUploadPending(store)
        say("D\n")
    } catch {
        say("E drain: \(error)\n")
        exit(1)
    }
    exit(0)
}

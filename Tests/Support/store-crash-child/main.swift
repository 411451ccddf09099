// The segment store's crash-test child: commits numbered transactions in a
// loop and prints each number after `commit` returns, until it is killed.
//
//   store-crash-child commit <directory> <full|interval|none|torn> <first-id>
//   ("torn" appends with write(2) and splits every write into 16-byte pieces
//   so kills tear transactions; the others copy into a mapped, preallocated file)
//   store-crash-child hold <directory>      (opens the store, prints "ready", sleeps)
//   store-crash-child read <directory>      (reads every pending segment, reports memory)
//   store-crash-child power <directory> <full|interval|none> <first-id> <commits> [key-hex]
//     (the power-cut harness's guest program, Scripts/power-guest.sh: reports
//     what recovery found, uploads and acknowledges sealed segments while it
//     commits; see PowerLossReport in Tests/DataIngestTests/PowerCutTests.swift)
//   With STORE_CRASH_KEY=<64 hex digits> in the environment the store is encrypted.
//
// Transaction `id` holds `id % 3 + 1` records `{t: Int64 id, k: Int32 index, n: Int32 count}`
// in collection "Tx".
import DataIngest
import Foundation
#if canImport(Glibc)
import Glibc
#endif

func document(id: Int64, k: Int32, n: Int32) -> [UInt8] {
    var out: [UInt8] = [30, 0, 0, 0]
    out += [0x12, UInt8(ascii: "t"), 0]
    withUnsafeBytes(of: id.littleEndian) { out += $0 }
    out += [0x10, UInt8(ascii: "k"), 0]
    withUnsafeBytes(of: k.littleEndian) { out += $0 }
    out += [0x10, UInt8(ascii: "n"), 0]
    withUnsafeBytes(of: n.littleEndian) { out += $0 }
    out.append(0)
    return out
}

/// Splits every write into pieces of at most 16 bytes, so a kill lands inside
/// a transaction's bytes and leaves a genuinely torn tail.
struct TearingFileSystem: StoreFileSystem {
    let real = PosixFileSystem()
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        real.write(fd, UnsafeRawBufferPointer(rebasing: bytes[..<min(bytes.count, 16)]))
    }
    func fdatasync(_ fd: Int32) -> Int32 { real.fdatasync(fd) }
    func fsync(_ fd: Int32) -> Int32 { real.fsync(fd) }
    func ftruncate(_ fd: Int32, _ length: Int) -> Int32 { real.ftruncate(fd, length) }
    func rename(_ from: String, _ to: String) -> Int32 { real.rename(from, to) }
}

func residentBytes() -> Int {
    let fd = open("/proc/self/statm", O_RDONLY)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    var buffer = [UInt8](repeating: 0, count: 128)
    let n = read(fd, &buffer, buffer.count)
    guard n > 0 else { return 0 }
    let fields = buffer[..<n].split(separator: UInt8(ascii: " "))
    guard fields.count > 1, let pages = Int(String(decoding: fields[1], as: UTF8.self)) else { return 0 }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
}

func say(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
if arguments.count >= 6 && arguments[1] == "power" {
    powerMode(arguments)
}
guard arguments.count >= 3 else {
    say("usage: store-crash-child commit|hold <directory> ...\n")
    exit(2)
}
var configuration = SegmentStore.Configuration(directory: arguments[2])
configuration.maxSegmentBytes = 16 << 10  // small segments: kills land during sealing too
configuration.maxSegmentAgeMilliseconds = 20
if arguments.count > 3 {
    switch arguments[3] {
    case "full": configuration.durability = .full
    case "none": configuration.durability = .none
    case "torn":
        // Tears write(2) appends; the other modes copy into a preallocated
        // mapping, where a kill tears a group only inside one copy.
        configuration.durability = .none
        configuration.preallocationBytes = 0
        configuration.fileSystem = TearingFileSystem()
    default: configuration.durability = .interval(milliseconds: 5)
    }
}
if let hex = ProcessInfo.processInfo.environment["STORE_CRASH_KEY"] {
    let digits = Array(hex.utf8)
    var key: [UInt8] = []
    var i = 0
    while i + 1 < digits.count, let byte = UInt8(String(decoding: digits[i...(i + 1)], as: UTF8.self), radix: 16) {
        key.append(byte)
        i += 2
    }
    configuration.encryptionKey = Data(key)
}
do {
    let store = try SegmentStore.open(configuration)
    if arguments[1] == "read" {
        // Reads every pending segment; reports resident memory after the 5th
        // and its peak afterwards (the memory test runs this in its own process).
        var records = 0
        var baseline = 0
        var peak = 0
        for (i, segment) in store.pendingSegments().enumerated() {
            let reader = try store.reader(for: segment)
            while let event = try reader.next() { if case .record = event { records += 1 } }
            if i == 4 { baseline = residentBytes() }
            if i > 4 { peak = max(peak, residentBytes()) }
        }
        say("records \(records) baseline \(baseline) peak \(peak)\n")
        try store.close()
        exit(0)
    }
    if arguments[1] == "hold" {
        say("ready\n")
        sleep(60)
        exit(0)
    }
    var id = Int64(arguments.count > 4 ? arguments[4] : "0") ?? 0
    for _ in 0..<10_000_000 {
        let n = Int32(id % 3 + 1)
        try store.commit { tx in
            for k in 0..<n { try tx.append(collection: "Tx", document: document(id: id, k: k, n: n)) }
        }
        say("\(id)\n")
        id += 1
    }
} catch {
    say("error: \(error)\n")
    exit(1)
}

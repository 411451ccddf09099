// The segment store's crash-test child: commits numbered transactions in a
// loop and prints each number after `commit` returns, until it is killed.
//
//   store-crash-child commit <directory> <full|interval|none> <first-id>
//   store-crash-child hold <directory>      (opens the store, prints "ready", sleeps)
//
// Transaction `id` holds `id % 3 + 1` records `{t: Int64 id, k: Int32 index, n: Int32 count}`
// in collection "Tx".
import DataIngest
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

func say(_ text: String) {
    let bytes = Array(text.utf8)
    _ = bytes.withUnsafeBytes { write(1, $0.baseAddress, $0.count) }
}

let arguments = CommandLine.arguments
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
    default: configuration.durability = .interval(milliseconds: 5)
    }
}
do {
    let store = try SegmentStore.open(configuration)
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

// libFuzzer harness: the segment reader (frames, CRCs, header, records) and
// the gzip inflater under it. Built and run by Scripts/fuzz.sh.
//
// The first byte picks the mode, so mutations of a raw stream are not all
// lost to the gzip CRC:
//   0: the rest is a gzip body (as uploaded), read as a sealed segment;
//   1: the rest is a raw segment stream, read as a sealed segment;
//   2: the rest is a raw stream, read as an active segment (no end frame);
//   3: the rest is a raw stream, gzip-compressed here, then read as in 0.
import IngestCore
import IngestSupport

// Small limits keep each run fast and exercise the limit checks.
let limits = SegmentReader.Limits(
    maxFramePayloadBytes: 1 << 20,
    gzip: GzipLimits(maxOutputBytes: 4 << 20, maxRatio: 50, ratioCheckFloorBytes: 64 << 10))

func drain(_ reader: SegmentReader) throws {
    var events = 0
    while let event = try reader.next() {
        events += 1
        if case .record(let record) = event {
            _ = try? BSONDocument(bson: record.document)
        }
        if events > 1_000_000 { fatalError("the reader does not advance") }
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    switch data[0] % 4 {
    case 0:
        if let reader = try? SegmentReader(gzipBytes: rest, limits: limits) { try? drain(reader) }
        _ = try? Gzip.decompress(rest, limits: limits.gzip)
    case 1:
        if let reader = try? SegmentReader(source: MemoryByteSource(rest), limits: limits) { try? drain(reader) }
    case 2:
        if let reader = try? SegmentReader(source: MemoryByteSource(rest), limits: limits, requiresEnd: false) {
            try? drain(reader)
        }
    default:
        guard let gzip = try? Gzip.compress(rest, level: 1) else { fatalError("gzip compression failed") }
        if let reader = try? SegmentReader(gzipBytes: gzip, limits: limits) { try? drain(reader) }
    }
    return 0
}

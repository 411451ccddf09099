// libFuzzer harness: the project's own deflate encoder (FastDeflater, the
// segment store's level 1). Whatever the input, zlib must inflate the gzip
// member it writes back to exactly the input. Built and run by Scripts/fuzz.sh.
//
// The first byte picks how the rest is fed to the compressor: in pieces of
// (first byte + 1) bytes, so block, window and buffer boundaries fall at
// every offset. The rest is also repeated 2^(first byte % 6) times (1 to
// 32), so that short inputs make long ones, with distant matches, several
// 65,535-byte blocks and the slide of the compressor's buffer.
import IngestSupport

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size > 0 else { return 0 }
    let piece = Int(data[0]) + 1
    let rest = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    var input: [UInt8] = []
    for _ in 0..<(1 << (Int(data[0]) % 6)) { input += rest }
    let deflater = FastDeflater()
    var packed: [UInt8] = []
    do {
        try input.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let n = min(piece, raw.count - offset)
                try deflater.compress(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + n)]), appendingTo: &packed)
                offset += n
            }
        }
        try deflater.finish(appendingTo: &packed)
    } catch {
        fatalError("compression failed: \(error)")
    }
    let limits = GzipLimits(maxOutputBytes: 64 << 20, maxRatio: 1_000_000)
    guard let unpacked = try? Gzip.decompress(packed, limits: limits) else { fatalError("zlib cannot inflate the output") }
    guard unpacked == input else { fatalError("the output inflates to other bytes") }
    // Incompressible input costs at most the stored blocks' 5 bytes per 65,535.
    guard packed.count <= input.count + 5 * (input.count / 65_535 + 1) + 20 else {
        fatalError("\(packed.count) bytes for \(input.count)")
    }
    return 0
}

#if canImport(Glibc)
import Glibc
#endif

/// A growable byte buffer for encoding. Its state lives behind an unsafe
/// pointer rather than in class properties, so writes pay neither Array's
/// uniqueness checks nor dynamic exclusivity checks: it is written by one
/// encoder at a time (a realm's, on the realm's thread).
final class RecordBuffer {
    private struct State {
        var base: UnsafeMutableRawPointer
        var count: Int
        var capacity: Int
    }

    private let state: UnsafeMutablePointer<State>

    init(capacity: Int) {
        let capacity = max(capacity, 64)
        state = .allocate(capacity: 1)
        state.initialize(to: State(base: .allocate(byteCount: capacity, alignment: 16), count: 0, capacity: capacity))
    }

    deinit {
        state.pointee.base.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
    }

    /// The number of bytes written.
    var count: Int {
        @inline(__always) get { state.pointee.count }
    }

    /// Makes room for `size` more bytes and returns where they go.
    @inline(__always)
    func claim(_ size: Int) -> UnsafeMutableRawPointer {
        if state.pointee.count + size > state.pointee.capacity { grow(to: state.pointee.count + size) }
        let position = state.pointee.base + state.pointee.count
        state.pointee.count += size
        return position
    }

    private func grow(to needed: Int) {
        var capacity = state.pointee.capacity
        while capacity < needed { capacity *= 2 }
        let base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        base.copyMemory(from: state.pointee.base, byteCount: state.pointee.count)
        state.pointee.base.deallocate()
        state.pointee.base = base
        state.pointee.capacity = capacity
    }

    @inline(__always)
    func append(_ byte: UInt8) {
        claim(1).storeBytes(of: byte, as: UInt8.self)
    }

    @inline(__always)
    func append<T: FixedWidthInteger>(littleEndian value: T) {
        claim(MemoryLayout<T>.size).storeBytes(of: value.littleEndian, as: T.self)
    }

    @inline(__always)
    func append(_ bytes: UnsafeRawBufferPointer) {
        guard let source = bytes.baseAddress, bytes.count > 0 else { return }
        claim(bytes.count).copyMemory(from: source, byteCount: bytes.count)
    }

    /// Overwrites 4 bytes at `offset` with a little-endian UInt32.
    @inline(__always)
    func store(_ value: UInt32, at offset: Int) {
        (state.pointee.base + offset).storeBytes(of: value.littleEndian, as: UInt32.self)
    }

    /// Drops everything after the first `count` bytes.
    func truncate(to count: Int) {
        state.pointee.count = min(count, state.pointee.count)
    }

    /// A copy of the bytes written.
    var array: [UInt8] {
        Array(UnsafeRawBufferPointer(start: state.pointee.base, count: state.pointee.count))
    }

    /// Calls `body` with the bytes written, without copying them; they must
    /// not be used after `body` returns.
    func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: state.pointee.base, count: state.pointee.count))
    }
}

import Foundation
import IngestCore
import IngestSupport

/// Reads an `Any` whose dynamic type is exactly a known type straight out
/// of its existential container: one comparison of the type metadata word
/// and a load of the inline value, instead of a runtime cast
/// (`swift_dynamicCast` or an opened generic call), which is far dearer and
/// which `create` would pay once per property per object.
///
/// The container of an `Any` is three words of inline value buffer followed
/// by the type metadata; values of at most three words that the runtime can
/// move bitwise (every type this is used for) are stored inline. That
/// layout is checked once per process against real boxed values
/// (``isVerified``); where it does not hold, every read answers `nil` and
/// callers take their casting path, so a different layout costs speed,
/// never correctness.
enum ExistentialPayload {
    /// Whether the layout described above was confirmed on this runtime;
    /// always `false` with `DATAINGEST_PORTABLE=1` (``PortableFallbacks``).
    static let isVerified: Bool = !PortableFallbacks.areForced && verifyLayout()

    /// The metadata word the container of an `Any` holding a `T` carries.
    @inline(__always)
    static func typeWord<T>(_ type: T.Type) -> UnsafeRawPointer {
        unsafeBitCast(type as Any.Type, to: UnsafeRawPointer.self)
    }

    /// Calls `body` with the container's metadata word and the address of
    /// its inline buffer. The value is borrowed, not copied.
    @inline(__always)
    static func peek<R>(_ value: borrowing Any, _ body: (_ typeWord: UnsafeRawPointer, _ buffer: UnsafeRawPointer) -> R) -> R {
        withUnsafePointer(to: value) { container in peek(at: UnsafeRawPointer(container), body) }
    }

    /// ``peek(_:_:)`` for the `Any` at `container`.
    @inline(__always)
    static func peek<R>(at container: UnsafeRawPointer, _ body: (_ typeWord: UnsafeRawPointer, _ buffer: UnsafeRawPointer) -> R) -> R {
        body(container.load(fromByteOffset: metadataOffset, as: UnsafeRawPointer.self), container)
    }

    /// The instance inside `value` when it was boxed with static type
    /// exactly `classWord` (a class's metadata); unretained: `value` keeps
    /// it alive.
    @inline(__always)
    static func instance(_ value: borrowing Any, classWord: UnsafeRawPointer) -> UnsafeRawPointer? {
        peek(value) { type, buffer in type == classWord ? buffer.load(as: UnsafeRawPointer.self) : nil }
    }

    private static let metadataOffset = 3 * MemoryLayout<UnsafeRawPointer>.size

    private final class Probe {}

    /// Boxes sample values of every type the fast paths read and checks
    /// that each container holds the expected metadata word and the value's
    /// exact bytes inline. Compares bytes only, so a wrong guess cannot
    /// misuse a reference.
    private static func verifyLayout() -> Bool {
        guard MemoryLayout<Any>.size == metadataOffset + MemoryLayout<UnsafeRawPointer>.size else { return false }
        func holds<T>(_ sample: T) -> Bool {
            let boxed: Any = sample
            return withUnsafeBytes(of: sample) { expected in
                peek(boxed) { type, buffer in
                    type == typeWord(T.self) && memcmp(buffer, expected.baseAddress!, expected.count) == 0
                }
            }
        }
        let probe = Probe()
        let object: Any = probe
        let classFound = instance(object, classWord: typeWord(Probe.self)) == UnsafeRawPointer(Unmanaged.passUnretained(probe).toOpaque())
        return withExtendedLifetime(probe) { classFound }
            && holds(true) && holds(Int(0x1234_5678_9ABC)) && holds(Int64(-7)) && holds(Float(1.5)) && holds(Double(2.5))
            && holds("short") && holds("a string longer than fifteen UTF-8 bytes") && holds(String(repeating: "x", count: 40))
            && holds(ObjectId(high: 0x0102_0304_0506_0708, low: 0x090A_0B0C)) && holds(Date(timeIntervalSince1970: 12.5))
            && holds(["key": 1] as [String: Any])
    }
}

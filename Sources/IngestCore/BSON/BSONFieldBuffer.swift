/// The heap storage of a ``BSONDocument``: a count and capacity followed by
/// the fields, in one allocation.
///
/// Why not `[Field]`: destroying an array of a non-trivial element type goes
/// through the runtime's generic `swift_arrayDestroy`, which calls the
/// element's value witness once per field; for a decoded record that was
/// about a fifth of decoding it. Here `deinit` is specialised code that
/// skips the fields holding nothing to release (inline keys, numbers,
/// ObjectIds, inline strings), and the decoder initializes fields in place.
///
/// Shared between copies of a document until one of them changes
/// (``BSONDocument`` checks uniqueness before every mutation), so a buffer
/// that is reachable from more than one place is never written.
final class BSONFieldBuffer: ManagedBuffer<BSONFieldBuffer.Header, BSONDocument.Field> {
    struct Header {
        /// Initialized fields, from the start.
        var count: Int
        /// Fields the allocation holds room for.
        var capacity: Int
    }

    /// A buffer with room for `capacity` fields and none initialized.
    @inline(__always)
    static func make(capacity: Int) -> BSONFieldBuffer {
        let buffer = create(minimumCapacity: capacity) { _ in Header(count: 0, capacity: capacity) }
        return unsafeDowncast(buffer, to: BSONFieldBuffer.self)
    }

    /// The shared buffer of empty documents. `nonisolated(unsafe)`: it is
    /// never written (this static keeps a reference, so no document holds
    /// it uniquely and the first mutation copies it).
    nonisolated(unsafe) static let empty = make(capacity: 0)

    /// The first field. Valid while the buffer is alive.
    @inline(__always)
    var fields: UnsafeMutablePointer<BSONDocument.Field> {
        withUnsafeMutablePointerToElements { $0 }
    }

    /// The header in place: through `header` every access would be a
    /// dynamically checked access to a class property.
    @inline(__always)
    private var headerAddress: UnsafeMutablePointer<Header> {
        withUnsafeMutablePointerToHeader { $0 }
    }

    @inline(__always)
    var count: Int {
        get { headerAddress.pointee.count }
        set { headerAddress.pointee.count = newValue }
    }

    /// Fields the allocation was made for (`capacity` is ManagedBuffer's
    /// own, which asks the allocator).
    @inline(__always)
    var fieldCapacity: Int { headerAddress.pointee.capacity }

    /// A new buffer with room for `capacity` (at least `count`) fields, the
    /// fields moved (not copied) from this one, which is left empty.
    func moving(toCapacity capacity: Int) -> BSONFieldBuffer {
        let count = self.count
        let new = Self.make(capacity: Swift.max(capacity, count))
        new.fields.moveInitialize(from: fields, count: count)
        new.count = count
        self.count = 0
        return new
    }

    /// A new buffer with room for `capacity` (at least `count`) fields and
    /// copies of this one's.
    func copy(capacity: Int) -> BSONFieldBuffer {
        let count = self.count
        let new = Self.make(capacity: Swift.max(capacity, count))
        new.fields.initialize(from: fields, count: count)
        new.count = count
        return new
    }

    deinit {
        let fields = self.fields
        let keysMayBeInline = StringRepresentation.isVerified
        for index in 0..<count {
            let field = UnsafeMutableRawPointer(fields + index)
            // An inline or interned key holds no reference (StringRepresentation).
            if !(keysMayBeInline && StringRepresentation.isImmortal(at: field + Self.keyOffset)) {
                (field + Self.keyOffset).assumingMemoryBound(to: String.self).deinitialize(count: 1)
            }
            let value = (field + Self.valueOffset).assumingMemoryBound(to: BSON.self)
            switch value.pointee {
            case .double, .objectId, .int64, .int32, .bool, .datetime, .null, .timestamp, .decimal128,
                .undefined, .minKey, .maxKey:
                break  // nothing to release
            default:
                value.deinitialize(count: 1)
            }
        }
    }

    /// Where a field's key and value lie: a struct's stored properties in
    /// declaration order (checked by `BSONFieldBufferTests`).
    static var keyOffset: Int { 0 }
    static var valueOffset: Int { MemoryLayout<String>.stride }
}

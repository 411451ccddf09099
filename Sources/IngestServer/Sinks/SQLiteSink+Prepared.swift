import IngestCore
import IngestSupport

/// The insert parameters of one write's objects, worked out from their BSON
/// bytes before the sink's lock is taken: the serial part of a write (the
/// lock holder's) is then only binding these, stepping and committing,
/// while other uploads prepare theirs on other threads.
///
/// Texts and blobs are copied into one buffer of the write (``bytes``) and
/// bound from it, borrowed, under the lock: so the rows of several objects
/// can be bound to one multi-row statement at once. Values that need a
/// conversion (Extended JSON, decimal text) are made here. An object that
/// cannot be prepared (invalid bytes, no layout for its collection) is
/// written by the unprepared path, which reports the error exactly as
/// before.
///
/// ```swift
/// let rows = SQLitePreparedRows(objects, layouts: layouts.withLock { $0 })
/// // under the lock, objects i..<j of a run whose table still has rows.insertSQL[collection]:
/// try rows.withBytes { bytes in
///     for (row, index) in (i..<j).enumerated() { try rows.bind(index, from: bytes, to: statement, row: Int32(row), parametersPerRow: 7) }
/// }
/// ```
struct SQLitePreparedRows {
    /// How a parameter is bound.
    enum Kind: UInt8 {
        case integer, real, null
        /// `value` is the byte offset in ``bytes``, `length` the byte count.
        case text, blob
        /// `value` indexes ``owned``.
        case ownedText
    }

    /// One bound parameter (the others stay NULL).
    struct Parameter {
        var kind: Kind
        /// The 1-based parameter index.
        var index: Int32
        var length: Int32 = 0
        /// An integer, a double's bit pattern, an offset or an index into ``owned``.
        var value: Int64
    }

    /// The texts and blobs of every object, back to back.
    private(set) var bytes: [UInt8] = []

    /// The parameters of all objects, back to back.
    private(set) var parameters: [Parameter] = []
    /// Object `i`'s parameters are `parameters[starts[i]..<ends[i]]`;
    /// `starts[i]` is -1 if it was not prepared.
    private(set) var starts: [Int] = []
    private(set) var ends: [Int] = []
    /// `preparedEnds[i]`: objects `i..<preparedEnds[i]` are prepared and of
    /// one collection (`i` itself if object `i` is not prepared).
    private(set) var preparedEnds: [Int] = []
    /// Converted values (Extended JSON, decimal text).
    private(set) var owned: [String] = []
    /// The insert statement each collection's parameters were made for: a
    /// migration since then changed the table's layout, and its objects
    /// are written by the unprepared path.
    private(set) var insertSQL: [String: String] = [:]

    /// Prepares `objects` against `layouts` (collection → layout).
    init(_ objects: [SinkObject], layouts: [String: SQLiteSink.Layout]) {
        starts.reserveCapacity(objects.count)
        ends.reserveCapacity(objects.count)
        // The objects are read in place and each run of one collection uses
        // its layout as one local: copies of an object or a layout per
        // object retained and released their arrays (about 300 instructions).
        preparedEnds = Array(repeating: 0, count: objects.count)
        objects.withUnsafeBufferPointer { objects in
            objects.forEachRun(of: \.collection) { name, run in
                if let layout = layouts[name] {
                    insertSQL[name] = layout.insertSQL
                    if parameters.isEmpty { parameters.reserveCapacity(objects.count * layout.forms.count) }
                    appendRun(objects, run, layout: layout)
                } else {
                    for _ in run {
                        starts.append(-1)
                        ends.append(-1)
                    }
                }
                var end = run.upperBound
                for position in run.reversed() {
                    if starts[position] < 0 { end = position }
                    preparedEnds[position] = end
                }
            }
        }
    }

    /// Appends the parameters of `objects[run]`, objects of the collection
    /// of `layout` (the buffer's own subscript reads an object in place; a
    /// slice's copies it).
    private mutating func appendRun(_ objects: UnsafeBufferPointer<SinkObject>, _ run: Range<Int>, layout: SQLiteSink.Layout) {
        // For objects whose fields the schema check located: which property
        // each column is (-1: none), for the property list last seen.
        var mapped: (storage: ObjectIdentifier, list: Int)?
        var propertyOfColumn: [Int] = []
        if bytes.isEmpty { bytes.reserveCapacity(objects.count * 32) }
        for position in run {
            let start = parameters.count
            let bytesStart = bytes.count
            if let fields = objects[position].fields {
                let storage = ObjectIdentifier(fields.storage)
                if mapped?.storage != storage || mapped?.list != fields.list {
                    mapped = (storage, fields.list)
                    propertyOfColumn = fields.propertyIndices(of: layout.columnNames)
                }
                if append(objects[position], fields: fields, propertyOfColumn: propertyOfColumn, layout: layout) {
                    starts.append(start)
                    ends.append(parameters.count)
                    continue
                }
                parameters.removeSubrange(start...)
                bytes.removeSubrange(bytesStart...)
            }
            guard append(objects[position], layout: layout) else {
                parameters.removeSubrange(start...)
                bytes.removeSubrange(bytesStart...)
                starts.append(-1)
                ends.append(-1)
                continue
            }
            starts.append(start)
            ends.append(parameters.count)
        }
    }

    /// Whether object `index` was prepared.
    func isPrepared(_ index: Int) -> Bool { starts[index] >= 0 }

    /// Whether objects `range` are prepared and of one collection.
    func arePrepared(_ range: Range<Int>) -> Bool { preparedEnds[range.lowerBound] >= range.upperBound }

    /// Appends the parameters of `object`; false if its bytes are not a
    /// valid document or a value cannot be converted (the unprepared path
    /// then reports why).
    private mutating func append(_ object: SinkObject, layout: SQLiteSink.Layout) -> Bool {
        let keys = layout.keys
        return object.bson.withUnsafeBytes { raw -> Bool in
            do {
                try keys.forEachColumn(in: raw) { element, column in try append(element, column: column, of: layout, in: raw) }
            } catch {
                return false
            }
            return true
        }
    }

    /// Appends the parameters of an object the schema check proved valid,
    /// reading each column's field where the check found it (no second
    /// walk); false if a span does not fit or a value cannot be converted
    /// (the caller then tries the walk).
    private mutating func append(_ object: SinkObject, fields: SinkFields, propertyOfColumn: [Int], layout: SQLiteSink.Layout) -> Bool {
        object.bson.withUnsafeBytes { raw -> Bool in
            do {
                for (column, property) in propertyOfColumn.enumerated() where property >= 0 {
                    let span = fields.span(property)
                    guard span.start >= 0 else { continue }  // absent: NULL
                    if appendScalar(span, column: column, of: layout, in: raw) { continue }
                    guard let element = BSONElement(span, in: raw) else { return false }
                    try append(element, column: column, of: layout, in: raw)
                }
            } catch {
                return false
            }
            return true
        }
    }

    /// Appends the parameter of the element at `span` when it is a null or
    /// one of the common scalars, read from the type byte and the value's
    /// bytes as ``append(_:column:of:in:)`` reads them through a
    /// ``BSONElement`` (its initializer and accessors are calls into
    /// IngestCore, about 100 instructions per field); false leaves the
    /// element to that function. The span comes from the schema check's
    /// walk of these bytes; a value of another size than its type's is
    /// left to the general path too.
    @inline(__always)
    private mutating func appendScalar(
        _ span: BSONElementSpan, column: Int, of layout: SQLiteSink.Layout, in raw: UnsafeRawBufferPointer
    ) -> Bool {
        guard span.fits(raw.count) else { return false }
        let start = Int(span.start)
        let value = Int(span.valueOffset)
        let size = Int(span.end) - value
        // Parameter 1 is _id, 2 is _ingested_at, then the properties.
        let index = Int32(column == 0 ? 1 : column + 2)
        @inline(__always) func load<T: FixedWidthInteger>(_: T.Type) -> T {
            T(littleEndian: raw.loadUnaligned(fromByteOffset: value, as: T.self))
        }
        let type = raw[start]
        if type == BSONType.null.rawValue || type == BSONType.undefined.rawValue {
            parameters.append(Parameter(kind: .null, index: index, value: 0))
            return true
        }
        guard layout.forms[column] != .json else { return false }
        switch type {
        case BSONType.bool.rawValue where size == 1:
            parameters.append(Parameter(kind: .integer, index: index, value: raw[value] == 1 ? 1 : 0))
        case BSONType.int32.rawValue where size == 4:
            parameters.append(Parameter(kind: .integer, index: index, value: Int64(load(Int32.self))))
        case BSONType.int64.rawValue where size == 8, BSONType.datetime.rawValue where size == 8:
            parameters.append(Parameter(kind: .integer, index: index, value: load(Int64.self)))
        case BSONType.double.rawValue where size == 8:
            parameters.append(Parameter(kind: .real, index: index, value: Int64(bitPattern: load(UInt64.self))))
        case BSONType.string.rawValue where size >= 5:
            // The int32 length, the bytes, the NUL.
            copied(.text, UnsafeRawBufferPointer(rebasing: raw[(value + 4)..<(value + size - 1)]), index: index)
        case BSONType.objectId.rawValue where size == 12:
            copied(.blob, UnsafeRawBufferPointer(rebasing: raw[value..<(value + 12)]), index: index)
        default:
            return false
        }
        return true
    }

    /// Appends the parameter of `element` for the layout's column `column`,
    /// converted as SQLiteSink.bind(_:form:to:at:) (the unprepared path) does.
    @inline(__always)
    private mutating func append(_ element: BSONElement, column: Int, of layout: SQLiteSink.Layout, in raw: UnsafeRawBufferPointer) throws {
        // Parameter 1 is _id, 2 is _ingested_at, then the properties.
        let index = Int32(column == 0 ? 1 : column + 2)
        func borrowed(_ kind: Kind, _ bytes: UnsafeRawBufferPointer?) {
            guard let bytes, bytes.baseAddress != nil else { return }
            copied(kind, bytes, index: index)
        }
        func owned(_ text: String) {
            parameters.append(Parameter(kind: .ownedText, index: index, value: Int64(self.owned.count)))
            self.owned.append(text)
        }
        switch element.type {
        case .null, .undefined: parameters.append(Parameter(kind: .null, index: index, value: 0))
        case _ where layout.forms[column] == .json: owned(try element.value().extendedJSON(.relaxed))
        case .bool: parameters.append(Parameter(kind: .integer, index: index, value: element.bool == true ? 1 : 0))
        case .int32, .int64: parameters.append(Parameter(kind: .integer, index: index, value: element.integer ?? 0))
        case .double:
            parameters.append(Parameter(kind: .real, index: index, value: Int64(bitPattern: (element.double ?? 0).bitPattern)))
        case .datetime: parameters.append(Parameter(kind: .integer, index: index, value: element.datetime ?? 0))
        case .string: borrowed(.text, element.stringBytes)
        case .objectId: borrowed(.blob, element.objectIdBytes)
        case .binary: borrowed(.blob, element.binaryPayload)
        case .decimal128: owned(element.decimal128?.description ?? "")
        default: owned(try element.value().extendedJSON(.relaxed))
        }
    }

    /// Appends a text or blob parameter whose bytes are copied into ``bytes``.
    @inline(__always)
    private mutating func copied(_ kind: Kind, _ value: UnsafeRawBufferPointer, index: Int32) {
        parameters.append(Parameter(kind: kind, index: index, length: Int32(value.count), value: Int64(bytes.count)))
        bytes.append(contentsOf: value)
    }

    /// Calls `body` with ``bytes``, which the binds borrow: the caller steps
    /// and resets the statement inside `body`.
    func withBytes<Value>(_ body: (UnsafeRawBufferPointer) throws(SQLiteError) -> Value) throws(SQLiteError) -> Value {
        try bytes.withUnsafeBytes { bytes in Result { () throws(SQLiteError) in try body(bytes) } }.get()
    }

    /// Binds object `index`'s parameters as row `row` (0-based) of a
    /// statement with `parametersPerRow` parameters per row (a one-row
    /// insert: row 0), texts and blobs borrowed from `bytes`
    /// (``withBytes(_:)``).
    @inline(__always)
    func bind(
        _ index: Int, from bytes: UnsafeRawBufferPointer, to statement: SQLiteStatement, row: Int32 = 0,
        parametersPerRow: Int32 = 0
    ) throws(SQLiteError) {
        let offset = row * parametersPerRow
        for parameter in parameters[starts[index]..<ends[index]] {
            let at = parameter.index + offset
            switch parameter.kind {
            case .integer: try statement.bind(parameter.value, at: at)
            case .real: try statement.bind(Double(bitPattern: UInt64(bitPattern: parameter.value)), at: at)
            case .null: try statement.bindNull(at: at)
            case .text:
                try statement.bind(
                    borrowedText: UnsafeRawBufferPointer(
                        rebasing: bytes[Int(parameter.value)..<(Int(parameter.value) + Int(parameter.length))]),
                    at: at)
            case .blob:
                try statement.bind(
                    borrowedBlob: UnsafeRawBufferPointer(
                        rebasing: bytes[Int(parameter.value)..<(Int(parameter.value) + Int(parameter.length))]),
                    at: at)
            case .ownedText: try statement.bind(owned[Int(parameter.value)], at: at)
            }
        }
    }
}

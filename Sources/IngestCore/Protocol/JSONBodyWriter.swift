import IngestSupport

/// Writes compact JSON bodies into bytes, the way the server has always
/// written them: members in the order written, no whitespace, strings
/// escaped by ``JSONString``. Commas are placed by the writer.
///
/// ```swift
/// var writer = JSONBodyWriter()
/// writer.beginObject()
/// writer.key("user_id"); writer.string(id)
/// writer.endObject()
/// writer.bytes   // {"user_id":"…"}
/// ```
package struct JSONBodyWriter {
    /// The JSON written so far.
    package private(set) var bytes: [UInt8] = []
    /// No comma goes before the next value (the start of a container, or after a key).
    private var atStart = true

    /// Creates an empty writer, with room for `capacity` bytes.
    package init(capacity: Int = 128) {
        bytes.reserveCapacity(capacity)
    }

    private mutating func separate() {
        if !atStart { bytes.append(UInt8(ascii: ",")) }
    }

    private mutating func open(_ bracket: UInt8) {
        separate()
        bytes.append(bracket)
        atStart = true
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        atStart = false
    }

    /// Starts an object (as a value).
    package mutating func beginObject() { open(UInt8(ascii: "{")) }

    /// Ends the current object.
    package mutating func endObject() { close(UInt8(ascii: "}")) }

    /// Starts an array (as a value).
    package mutating func beginArray() { open(UInt8(ascii: "[")) }

    /// Ends the current array.
    package mutating func endArray() { close(UInt8(ascii: "]")) }

    /// Writes a member's key; the next call writes its value. Keys are the
    /// protocol's own ASCII names, written as they are.
    package mutating func key(_ name: StaticString) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
        bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        atStart = true
    }

    /// Writes a string value.
    package mutating func string(_ value: String) {
        separate()
        JSONString.append(value, to: &bytes)
        atStart = false
    }

    /// Writes an integer value.
    package mutating func integer<T: BinaryInteger>(_ value: T) {
        separate()
        bytes.append(contentsOf: String(value).utf8)
        atStart = false
    }

    /// Writes `text`, which must be one complete JSON value, as it is.
    package mutating func raw(_ text: String) {
        separate()
        bytes.append(contentsOf: text.utf8)
        atStart = false
    }

    /// Writes `null`.
    package mutating func null() {
        raw("null")
    }
}

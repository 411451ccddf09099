/// BSON binary data (type 0x05): a subtype byte and the bytes.
///
/// ```swift
/// let uuid = BSONBinary(subtype: BSONBinary.Subtype.uuid, bytes: Array(repeating: 0, count: 16))
/// ```
public struct BSONBinary: Sendable, Hashable {
    /// The subtype byte. Named subtypes are in ``Subtype``.
    public var subtype: UInt8
    /// The payload. For the old subtype 0x02 this is the payload without the
    /// int32 length that the wire format repeats inside it: the decoder
    /// checks and drops that length, the encoder writes it back.
    public var bytes: [UInt8]

    /// Binary data of the given subtype (generic by default).
    public init(subtype: UInt8 = Subtype.generic, bytes: [UInt8]) {
        self.subtype = subtype
        self.bytes = bytes
    }

    /// The subtypes the BSON specification names.
    public enum Subtype {
        public static let generic: UInt8 = 0x00
        public static let function: UInt8 = 0x01
        /// The old binary subtype: the payload starts with its own int32 length.
        public static let binaryOld: UInt8 = 0x02
        public static let uuidOld: UInt8 = 0x03
        public static let uuid: UInt8 = 0x04
        public static let md5: UInt8 = 0x05
        public static let encrypted: UInt8 = 0x06
        public static let column: UInt8 = 0x07
        public static let sensitive: UInt8 = 0x08
        public static let vector: UInt8 = 0x09
        public static let userDefinedLow: UInt8 = 0x80
    }
}

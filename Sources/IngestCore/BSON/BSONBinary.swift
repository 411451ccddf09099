/// BSON binary data (type 0x05): a subtype byte and the bytes.
public struct BSONBinary: Sendable, Hashable {
    /// The subtype byte. Named subtypes are in ``Subtype``.
    public var subtype: UInt8
    /// The payload.
    public var bytes: [UInt8]

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

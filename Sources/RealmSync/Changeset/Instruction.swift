import Foundation
import IngestCore

/// One instruction of a Realm changeset (realm-core's sync instructions).
/// Names of tables, fields and dictionary keys are the interned strings
/// they refer to, already resolved; the ``internString(index:string:)``
/// instructions that defined them stay in the list, so that a changeset
/// re-encodes byte for byte.
///
/// ```swift
/// for instruction in try ChangesetDecoder.decodeAll(bytes) {
///     if case .createObject(let table, let key) = instruction { print(table, key) }
/// }
/// ```
public enum Instruction: Sendable, Hashable {
    /// 0x3f: defines interned string `index` (0, 1, 2, ... in order; each string once).
    case internString(index: UInt32, string: String)
    /// 0: declares a table (a class).
    case addTable(AddTable)
    /// 1: removes a table.
    case eraseTable(table: String)
    /// 2: creates an object with its primary key (a no-op if it exists).
    case createObject(table: String, object: PrimaryKey)
    /// 3: removes an object.
    case eraseObject(table: String, object: PrimaryKey)
    /// 4: sets a field, a list element or a dictionary entry.
    case update(Update)
    /// 5: adds to an integer field.
    case addInteger(ObjectPath, value: Int64)
    /// 6: declares a column (a property).
    case addColumn(AddColumn)
    /// 7: removes a column.
    case eraseColumn(table: String, field: String)
    /// 8: inserts into a list at the path's last index.
    case arrayInsert(ObjectPath, value: Payload, priorSize: UInt32)
    /// 9: moves the list element at the path's last index to `newIndex`.
    case arrayMove(ObjectPath, newIndex: UInt32, priorSize: UInt32)
    /// 10: removes the list element at the path's last index.
    case arrayErase(ObjectPath, priorSize: UInt32)
    /// 11: empties the collection at the path.
    case clear(ObjectPath, collection: CollectionType)
    /// 12: adds a value to the set at the path.
    case setInsert(ObjectPath, value: Payload)
    /// 13: removes a value from the set at the path.
    case setErase(ObjectPath, value: Payload)

    /// The instruction code on the wire.
    public var code: UInt8 {
        switch self {
        case .internString: return 0x3F
        case .addTable: return 0
        case .eraseTable: return 1
        case .createObject: return 2
        case .eraseObject: return 3
        case .update: return 4
        case .addInteger: return 5
        case .addColumn: return 6
        case .eraseColumn: return 7
        case .arrayInsert: return 8
        case .arrayMove: return 9
        case .arrayErase: return 10
        case .clear: return 11
        case .setInsert: return 12
        case .setErase: return 13
        }
    }
}

/// What an ``Instruction/addTable(_:)`` declares.
public struct AddTable: Sendable, Hashable {
    /// The table (class) name.
    public var table: String
    /// Top-level, embedded or asymmetric.
    public var type: TableType
    /// The primary key of a top-level or asymmetric table; nil for an embedded one.
    public var primaryKey: PrimaryKeySpec?

    /// The primary key column of a table.
    public struct PrimaryKeySpec: Sendable, Hashable {
        /// Its field name (`_id` for synced classes).
        public var field: String
        /// Its type: int, string, ObjectId, UUID (or GlobalKey).
        public var type: PayloadType
        /// Whether it may be null.
        public var isNullable: Bool

        /// A primary key spec.
        public init(field: String, type: PayloadType, isNullable: Bool) {
            self.field = field
            self.type = type
            self.isNullable = isNullable
        }
    }

    /// A table declaration.
    public init(table: String, type: TableType, primaryKey: PrimaryKeySpec?) {
        self.table = table
        self.type = type
        self.primaryKey = primaryKey
    }
}

/// What an ``Instruction/addColumn(_:)`` declares.
public struct AddColumn: Sendable, Hashable {
    /// The table.
    public var table: String
    /// The column (property) name.
    public var field: String
    /// The value type; ``PayloadType/null`` declares a mixed column, ``PayloadType/link``
    /// a link (or embedded object) column.
    public var type: PayloadType
    /// Whether values (or collection elements) may be null.
    public var isNullable: Bool
    /// Single value, list, dictionary or set.
    public var collection: CollectionType
    /// The target table of a link column.
    public var linkTarget: String?
    /// The key type of a dictionary column (string).
    public var keyType: PayloadType?

    /// A column declaration.
    public init(
        table: String, field: String, type: PayloadType, isNullable: Bool, collection: CollectionType = .single,
        linkTarget: String? = nil, keyType: PayloadType? = nil
    ) {
        self.table = table
        self.field = field
        self.type = type
        self.isNullable = isNullable
        self.collection = collection
        self.linkTarget = linkTarget
        self.keyType = keyType
    }
}

/// An ``Instruction/update(_:)``: a value for the field or element the path names.
public struct Update: Sendable, Hashable {
    /// Where the value goes.
    public var path: ObjectPath
    /// The value.
    public var value: Payload
    /// Whether the value is the property's default (for a field or
    /// dictionary entry; false when the path ends in a list index).
    public var isDefault: Bool
    /// The list's size before the update (when the path ends in a list index; else 0).
    public var priorSize: UInt32

    /// An update.
    public init(path: ObjectPath, value: Payload, isDefault: Bool = false, priorSize: UInt32 = 0) {
        self.path = path
        self.value = value
        self.isDefault = isDefault
        self.priorSize = priorSize
    }

    /// Whether the path ends in a list index (then ``priorSize`` is on the
    /// wire, otherwise ``isDefault``).
    public var isArrayUpdate: Bool { path.endsInIndex }
}

/// The place an instruction touches: a table, an object's primary key, a
/// field and a path inside the field's value (list indexes, dictionary keys
/// and embedded objects' field names).
public struct ObjectPath: Sendable, Hashable {
    /// The table.
    public var table: String
    /// The object's primary key.
    public var object: PrimaryKey
    /// The field of the object.
    public var field: String
    /// The path inside the field.
    public var path: [PathElement]

    /// A path.
    public init(table: String, object: PrimaryKey, field: String, path: [PathElement] = []) {
        self.table = table
        self.object = object
        self.field = field
        self.path = path
    }

    /// Whether the last element is a list index.
    public var endsInIndex: Bool {
        if case .index? = path.last { return true }
        return false
    }
}

/// One step of a path: a list index or a key (a dictionary key or an
/// embedded object's field name). On the wire an index is its number, a key
/// is -1 followed by an interned string.
public enum PathElement: Sendable, Hashable {
    /// A list index.
    case index(UInt32)
    /// A dictionary key or field name.
    case key(String)
}

/// An object's primary key as a changeset names it.
public enum PrimaryKey: Sendable, Hashable {
    /// A null key (a nullable primary key column).
    case null
    /// An int key.
    case int(Int64)
    /// A string key.
    case string(String)
    /// A table-local key (realm-core supports it on the wire; sync clients do not send it).
    case globalKey(high: UInt64, low: UInt64)
    /// An ObjectId key (the usual `_id`).
    case objectId(ObjectId)
    /// A UUID key.
    case uuid(UUID)
}

/// The kind of a table in an ``AddTable``.
public enum TableType: UInt8, Sendable, Hashable, CaseIterable {
    /// An ordinary, bidirectionally synced class.
    case topLevel = 0
    /// An embedded class (objects live inside others).
    case embedded = 1
    /// An asymmetric class (`AsymmetricObject`: upload only).
    case asymmetric = 2
}

/// The collection kind of a column or a ``Instruction/clear(_:collection:)``.
public enum CollectionType: UInt8, Sendable, Hashable, CaseIterable {
    /// One value.
    case single = 0
    /// A list.
    case list = 1
    /// A dictionary with string keys.
    case dictionary = 2
    /// A set.
    case set = 3
}

/// The type tag of a payload (and of a column).
public enum PayloadType: Int8, Sendable, Hashable, CaseIterable {
    /// A set is created at the position (collections in mixed).
    case set = -6
    /// A list is created at the position.
    case list = -5
    /// The dictionary entry at the position is erased.
    case erased = -4
    /// A dictionary is created at the position.
    case dictionary = -3
    /// An embedded object is created at the position.
    case objectValue = -2
    /// A table-local object key (not sent by sync clients).
    case globalKey = -1
    /// Null; as a column type: mixed.
    case null = 0
    /// A 64-bit integer.
    case int = 1
    /// A boolean.
    case bool = 2
    /// A string.
    case string = 3
    /// Binary data.
    case binary = 4
    /// A timestamp: seconds and nanoseconds.
    case timestamp = 5
    /// A 32-bit float (4 bytes, little-endian).
    case float = 6
    /// A 64-bit double (8 bytes, little-endian).
    case double = 7
    /// A decimal128.
    case decimal = 8
    /// A link: a target table and a primary key.
    case link = 9
    /// An ObjectId (12 bytes).
    case objectId = 10
    /// A UUID (16 bytes).
    case uuid = 11
}

/// A value in a changeset.
public enum Payload: Sendable, Hashable {
    /// Creates a set at the position.
    case set
    /// Creates a list at the position.
    case list
    /// Erases the dictionary entry at the position.
    case erased
    /// Creates a dictionary at the position.
    case dictionary
    /// Creates an embedded object at the position (its fields follow as updates).
    case objectValue
    /// Null.
    case null
    /// An integer.
    case int(Int64)
    /// A boolean.
    case bool(Bool)
    /// A string.
    case string(String)
    /// Binary data.
    case binary([UInt8])
    /// A timestamp: seconds since 1970 and nanoseconds, both of the same sign.
    case timestamp(seconds: Int64, nanoseconds: Int32)
    /// A float.
    case float(Float)
    /// A double.
    case double(Double)
    /// A decimal128.
    case decimal(Decimal128)
    /// A link to an object of another table.
    case link(table: String, key: PrimaryKey)
    /// An ObjectId.
    case objectId(ObjectId)
    /// A UUID.
    case uuid(UUID)

    /// The type tag.
    public var type: PayloadType {
        switch self {
        case .set: return .set
        case .list: return .list
        case .erased: return .erased
        case .dictionary: return .dictionary
        case .objectValue: return .objectValue
        case .null: return .null
        case .int: return .int
        case .bool: return .bool
        case .string: return .string
        case .binary: return .binary
        case .timestamp: return .timestamp
        case .float: return .float
        case .double: return .double
        case .decimal: return .decimal
        case .link: return .link
        case .objectId: return .objectId
        case .uuid: return .uuid
        }
    }
}

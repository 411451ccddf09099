// The value and schema types a user of `import DataIngest` meets in its API,
// re-exported by name, so that code written for the seed SDK needs one import
// (as the seed's single `import RealmSwift` did). Everything else in
// IngestCore (the segment format, codecs' internals) stays out of users' way.

// Values
@_exported import struct IngestCore.ObjectId
@_exported import struct IngestCore.ObjectIdError
@_exported import struct IngestCore.Decimal128
@_exported import struct IngestCore.Decimal128Error

// BSON documents (dynamic access, local stores, quarantined objects)
@_exported import enum IngestCore.BSON
@_exported import struct IngestCore.BSONDocument
@_exported import struct IngestCore.BSONBinary
@_exported import struct IngestCore.BSONTimestamp
@_exported import enum IngestCore.BSONType
@_exported import struct IngestCore.BSONError
@_exported import enum IngestCore.ExtendedJSONMode
@_exported import struct IngestCore.ExtendedJSONError

// Schemas (`Realm.schema`, `Object.objectSchema()`)
@_exported import struct IngestCore.Schema
@_exported import struct IngestCore.ObjectSchema
@_exported import struct IngestCore.Property
@_exported import enum IngestCore.PropertyType
@_exported import enum IngestCore.CollectionKind
@_exported import struct IngestCore.SchemaError
@_exported import struct IngestCore.SchemaViolation

// The store's identity and encryption at rest
@_exported import struct IngestCore.SegmentStoreID
@_exported import struct IngestCore.SegmentEncryptionKey
@_exported import struct IngestCore.SegmentError

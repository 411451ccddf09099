// `import DataIngest` alone gives apps ObjectId, Decimal128, BSON and the
// schema types, as the seed SDK's single import did.
@_exported import IngestCore

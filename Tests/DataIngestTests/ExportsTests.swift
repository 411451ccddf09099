import Testing
import DataIngest

/// Code written for the seed SDK imports one module; the value types it uses
/// must come with it.
@Suite struct ExportsTests {
    @Test func importingDataIngestAloneGivesTheValueTypes() throws {
        let id = ObjectId.generate()
        let document: BSONDocument = ["_id": .objectId(id)]
        #expect(try BSONDocument(bson: document.bsonBytes())["_id"] == .objectId(id))
    }
}

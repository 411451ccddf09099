import IngestCore

/// The primary keys created in one write transaction, for the duplicate
/// `_id` check. `create` checks one key per object, so the common keys
/// (`ObjectId` and integers) live in an open-addressing table of plain
/// words: one multiply to hash, no `Hasher`, no enum hashing. ASCII string
/// keys (ingest-forward's `<source>:<offset>`) live in a second such table,
/// hashed a word at a time: for ASCII, `String` equality is byte equality.
/// Other strings and UUID keys go to a `Set`.
struct TransactionKeySet {
    /// One key: the class, and the key's 12 (ObjectId) or 8 (integer)
    /// bytes. A slot is empty unless `generation` is the set's current one.
    private struct Slot {
        var type: UInt
        var high: UInt64
        var low: UInt64
        var generation: UInt32
        var tag: UInt8
    }

    private var slots: [Slot] = []
    /// The number of keys in `slots`.
    private var count = 0
    /// Bumped by `removeAll`, which so empties every slot at once: a
    /// one-object transaction does not pay for clearing a large table.
    private var generation: UInt32 = 1
    private var others: Set<Realm.TransactionKey> = []
    /// ASCII string keys: where each is in `strings`, by its hash. A slot is
    /// empty unless its generation is `stringGeneration`.
    private var stringSlots: [(hash: UInt64, index: Int32, generation: UInt32)] = []
    private var strings: [(type: UInt, key: String)] = []
    private var stringGeneration: UInt32 = 1

    /// Adds `key` of class `type`; returns false when the transaction
    /// already has it.
    mutating func insert(type: ObjectIdentifier, key: PrimaryKeyValue) -> Bool {
        let typeBits = UInt(bitPattern: type)
        switch key {
        case .objectId(let id):
            let (high, low) = id.withBytes { raw in
                (raw.loadUnaligned(as: UInt64.self), UInt64(raw.loadUnaligned(fromByteOffset: 8, as: UInt32.self)))
            }
            return insertWords(type: typeBits, high: high, low: low, tag: 1)
        case .int(let value):
            return insertWords(type: typeBits, high: UInt64(bitPattern: value), low: 0, tag: 2)
        case .string(let string):
            if let hash = Self.asciiHash(string, type: typeBits) { return insertString(string, type: typeBits, hash: hash) }
            return others.insert(Realm.TransactionKey(type: type, key: key)).inserted
        case .uuid:
            return others.insert(Realm.TransactionKey(type: type, key: key)).inserted
        }
    }

    /// A hash of `string`'s bytes and `type`, or nil if a byte is not ASCII
    /// (canonically equivalent strings can differ in bytes only then).
    private static func asciiHash(_ string: String, type: UInt) -> UInt64? {
        var string = string
        return string.withUTF8 { bytes -> UInt64? in
            var hash = (UInt64(bytes.count) ^ UInt64(type)) &* 0x9E37_79B9_7F4A_7C15
            var high: UInt64 = 0
            var offset = 0
            let raw = UnsafeRawBufferPointer(bytes)
            while offset + 8 <= raw.count {
                let word = raw.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                high |= word
                hash = (hash ^ word) &* 0xBF58_476D_1CE4_E5B9
                hash ^= hash >> 29
                offset += 8
            }
            var last: UInt64 = 0
            while offset < raw.count {
                last = last << 8 | UInt64(raw[offset])
                offset += 1
            }
            high |= last
            guard high & 0x8080_8080_8080_8080 == 0 else { return nil }
            hash = (hash ^ last) &* 0x94D0_49BB_1331_11EB
            return hash ^ hash >> 31
        }
    }

    private mutating func insertString(_ key: String, type: UInt, hash: UInt64) -> Bool {
        if (strings.count + 1) * 2 > stringSlots.count { growStrings() }
        let generation = stringGeneration
        let found = stringSlots.withUnsafeMutableBufferPointer { slots -> Int? in
            let mask = slots.count - 1
            var index = Int(truncatingIfNeeded: hash) & mask
            // Ends: the table is at most half full, so an empty slot exists.
            while true {
                let slot = slots[index]
                if slot.generation != generation { return index }
                if slot.hash == hash {
                    let other = strings[Int(slot.index)]
                    if other.type == type && other.key == key { return nil }
                }
                index = (index + 1) & mask
            }
        }
        guard let found else { return false }
        stringSlots[found] = (hash, Int32(strings.count), generation)
        strings.append((type, key))
        return true
    }

    private mutating func growStrings() {
        let keys = strings
        stringSlots = Array(repeating: (0, 0, 0), count: max(16, stringSlots.count * 2))
        stringGeneration = 1
        strings.removeAll(keepingCapacity: true)
        for entry in keys {
            _ = insertString(entry.key, type: entry.type, hash: Self.asciiHash(entry.key, type: entry.type) ?? 0)
        }
    }

    /// Forgets every key, keeping the memory for the next transaction.
    mutating func removeAll() {
        if count > 0 {
            count = 0
            generation &+= 1
            if generation == 0 {  // wrapped: old generations could match again
                slots.withUnsafeMutableBufferPointer { buffer in
                    for index in buffer.indices { buffer[index].generation = 0 }
                }
                generation = 1
            }
        }
        if !others.isEmpty { others.removeAll(keepingCapacity: true) }
        if !strings.isEmpty {
            strings.removeAll(keepingCapacity: true)
            stringGeneration &+= 1
            if stringGeneration == 0 {  // wrapped: old generations could match again
                for index in stringSlots.indices { stringSlots[index].generation = 0 }
                stringGeneration = 1
            }
        }
    }

    private mutating func insertWords(type: UInt, high: UInt64, low: UInt64, tag: UInt8) -> Bool {
        if (count + 1) * 2 > slots.count { grow() }
        let generation = self.generation
        let inserted = slots.withUnsafeMutableBufferPointer { buffer -> Bool in
            let mask = buffer.count - 1
            var mixed = (high ^ (low &* 0x9E37_79B9_7F4A_7C15) ^ UInt64(type)) &* 0xBF58_476D_1CE4_E5B9
            mixed ^= mixed >> 31
            var index = Int(truncatingIfNeeded: mixed) & mask
            // Ends: the table is at most half full, so an empty slot exists.
            while true {
                let slot = buffer[index]
                if slot.generation != generation {
                    buffer[index] = Slot(type: type, high: high, low: low, generation: generation, tag: tag)
                    return true
                }
                if slot.high == high && slot.low == low && slot.tag == tag && slot.type == type { return false }
                index = (index + 1) & mask
            }
        }
        if inserted { count += 1 }
        return inserted
    }

    private mutating func grow() {
        let old = slots
        let oldGeneration = generation
        slots = Array(repeating: Slot(type: 0, high: 0, low: 0, generation: 0, tag: 0), count: max(16, slots.count * 2))
        generation = 1
        count = 0
        for slot in old where slot.generation == oldGeneration {
            _ = insertWords(type: slot.type, high: slot.high, low: slot.low, tag: slot.tag)
        }
    }
}

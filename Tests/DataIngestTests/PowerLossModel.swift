import Foundation
import Testing
import IngestCore
@testable import DataIngest
#if canImport(Glibc)
import Glibc
import IngestTestSupport
#endif

/// A file system that records every change the store makes through its seam
/// (``StoreFileSystem``) and builds from the record the states a power cut
/// could leave on disk (``PowerLossModelTests``).
///
/// The model, per file: what was synced is kept; what was written since (by
/// `write`, `pwrite`, or stores into a shared mapping, seen by reading the
/// file back at each recorded event) may be on disk or not, sector by sector
/// (512 bytes), each sector holding any version it had since its last sync
/// (so writes are torn at sector boundaries and reordered). Namespace and
/// size changes (create, rename, unlink, truncate, preallocate, growth) form
/// one ordered log, as in a journaling file system (ext4, xfs): a crash keeps
/// a prefix of it, at least up to the last `fsync` (or, for the file's own
/// size, `fdatasync`). A size that grew by writes is kept only with the data
/// written up to it (ext4's `data=ordered`, xfs); a size that grew by
/// preallocation reads as zeros where nothing was synced. (`Choice.strict`
/// drops that rule: POSIX's minimum, where unsynced data is simply gone.)
// @unchecked Sendable: all state is guarded by `lock`.
final class RecordingFileSystem: StoreFileSystem, @unchecked Sendable {
    static let sector = 512

    struct Inode {
        /// Content on disk for sure (at the last sync), and its size.
        var durable: [UInt8] = []
        /// Versions of each sector written since that sync, oldest first.
        var versions: [Int: [[UInt8]]] = [:]
        /// The content last read back (the page cache's).
        var current: [UInt8] = []
        var mapped = false
        /// Incremented by each sync (versions restart from the synced content).
        var generation = 0
    }

    enum MetadataChange {
        case link(path: String, inode: Int)
        case rename(from: String, to: String)
        case unlink(path: String)
        /// A size change; `ordered`: grown by writes (kept only with its data),
        /// with the number of versions each sector had then.
        case size(inode: Int, size: Int, ordered: (generation: Int, versions: [Int: Int])?)
    }

    /// One point in time at which the power could be cut.
    struct Point {
        var metadataCount: Int
        var metadataFloor: Int
        /// Per inode: durable content and the versions of its sectors at that point.
        var inodes: [Int: (durable: [UInt8], versions: [Int: [[UInt8]]], generation: Int)]
        var label: String
    }

    let real = PosixFileSystem()
    let root: String
    private let lock = NSLock()
    private var inodes: [Int: Inode] = [:]
    private var byKernelInode: [UInt64: Int] = [:]
    private var metadata: [MetadataChange] = []
    private var floor = 0
    private(set) var points: [Point] = []
    /// Syncs, renames and unlinks: the point after each, its kind and path.
    private(set) var events: [(point: Int, kind: String, path: String)] = []
    private var nextInode = 0

    init(root: String) {
        self.root = root
    }

    // MARK: Recording

    private func path(of fd: Int32) -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        guard n > 0 else { return nil }
        let path = String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        guard path.hasPrefix(root), !path.hasSuffix(" (deleted)") else { return nil }
        return path
    }

    /// The model inode of `fd`, linked into the log at its first event.
    private func inode(of fd: Int32) -> Int? {
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, let path = path(of: fd) else { return nil }
        if let known = byKernelInode[UInt64(info.st_ino)] { return known }
        let id = nextInode
        nextInode += 1
        byKernelInode[UInt64(info.st_ino)] = id
        inodes[id] = Inode()
        metadata.append(.link(path: path, inode: id))
        return id
    }

    private func read(fd writable: Int32) -> [UInt8] {
        // The store's descriptor may be write-only: read through a new one.
        let fd = Glibc.open("/proc/self/fd/\(writable)", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return [] }
        defer { Glibc.close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + done, $0.count - done, off_t(done)) }
            if n <= 0 { break }
            done += n
        }
        return Array(bytes[..<done])
    }

    /// Reads the file back and records changed sectors as new versions; a
    /// size change goes to the metadata log.
    private func refresh(_ id: Int, fd: Int32, grownByWrite: Bool) {
        guard var node = inodes[id] else { return }
        let now = read(fd: fd)
        let sectors = (max(now.count, node.current.count) + Self.sector - 1) / Self.sector
        for s in 0..<sectors {
            let range = (s * Self.sector)..<((s + 1) * Self.sector)
            let new = Array(now[min(range.lowerBound, now.count)..<min(range.upperBound, now.count)])
            let old = Array(node.current[min(range.lowerBound, node.current.count)..<min(range.upperBound, node.current.count)])
            if new != old { node.versions[s, default: []].append(new) }
        }
        if now.count != node.current.count {
            metadata.append(
                .size(
                    inode: id, size: now.count,
                    ordered: grownByWrite && now.count > node.current.count ? (node.generation, node.versions.mapValues(\.count)) : nil))
        }
        node.current = now
        inodes[id] = node
    }

    private func sync(_ id: Int, fd: Int32, everything: Bool) {
        refresh(id, fd: fd, grownByWrite: true)
        guard var node = inodes[id] else { return }
        node.durable = node.current
        node.versions = [:]
        node.generation += 1
        inodes[id] = node
        if everything {
            floor = metadata.count
        } else if let last = metadata.lastIndex(where: {
            if case .size(id, _, _) = $0 { return true }; if case .link(_, id) = $0 { return true }; return false
        }) {
            floor = max(floor, last + 1)
        }
    }

    /// Mapped files change without events: read them back.
    private func refreshMapped() {
        for (id, node) in inodes where node.mapped {
            guard let fd = mappedFDs[id] else { continue }
            refresh(id, fd: fd, grownByWrite: false)
        }
    }

    private var mappedFDs: [Int: Int32] = [:]

    private func point(_ label: String) {
        refreshMapped()
        points.append(
            Point(
                metadataCount: metadata.count, metadataFloor: floor,
                inodes: inodes.mapValues { ($0.durable, $0.versions, $0.generation) }, label: label))
    }

    /// Records a point in time (for example right after a commit returned).
    func mark(_ label: String) {
        lock.lock()
        defer { lock.unlock() }
        point(label)
    }

    /// The number of points so far (a commit's position).
    var pointCount: Int {
        lock.lock()
        defer { lock.unlock() }
        return points.count
    }

    private func event<T>(_ label: String, fd: Int32?, _ body: () -> T, after: (Int?) -> Void) -> T {
        lock.lock()
        defer { lock.unlock() }
        point("before \(label)")
        let id = fd.flatMap { inode(of: $0) }
        let result = body()
        after(id)
        point("after \(label)")
        return result
    }

    // MARK: StoreFileSystem

    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        event("write", fd: fd, { real.write(fd, bytes) }) { id in if let id { refresh(id, fd: fd, grownByWrite: true) } }
    }

    func pwrite(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        event("pwrite", fd: fd, { real.pwrite(fd, bytes, at: offset) }) { id in if let id { refresh(id, fd: fd, grownByWrite: true) } }
    }

    func fdatasync(_ fd: Int32) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        point("before fdatasync")
        // What is synced is what the file held when the sync began.
        if let id = inode(of: fd) { sync(id, fd: fd, everything: false) }
        let rc = real.fdatasync(fd)
        if let path = path(of: fd) { events.append((points.count, "sync", path)) }
        point("after fdatasync")
        return rc
    }

    func fsync(_ fd: Int32) -> Int32 {
        lock.lock()
        defer { lock.unlock() }
        point("before fsync")
        if let id = inode(of: fd) {
            sync(id, fd: fd, everything: true)
        } else {
            floor = metadata.count  // a directory: every change logged so far
        }
        let rc = real.fsync(fd)
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink("/proc/self/fd/\(fd)", &buffer, buffer.count - 1)
        if n > 0 { events.append((points.count, "sync", String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self))) }
        point("after fsync")
        return rc
    }

    func ftruncate(_ fd: Int32, _ length: Int) -> Int32 {
        event("ftruncate", fd: fd, { real.ftruncate(fd, length) }) { id in if let id { refresh(id, fd: fd, grownByWrite: false) } }
    }

    func allocate(_ fd: Int32, offset: Int, length: Int) -> Int32 {
        event("allocate", fd: fd, { real.allocate(fd, offset: offset, length: length) }) { id in
            if let id { refresh(id, fd: fd, grownByWrite: false) }
        }
    }

    func rename(_ from: String, _ to: String) -> Int32 {
        event("rename \(from.split(separator: "/").last ?? "")", fd: nil, { real.rename(from, to) }) { _ in
            metadata.append(.rename(from: from, to: to))
            events.append((points.count, "rename", to))
        }
    }

    func unlink(_ path: String) -> Int32 {
        event("unlink \(path.split(separator: "/").last ?? "")", fd: nil, { real.unlink(path) }) { _ in
            metadata.append(.unlink(path: path))
            events.append((points.count, "unlink", path))
        }
    }

    func map(_ fd: Int32, length: Int) -> UnsafeMutableRawPointer? {
        event("map", fd: fd, { real.map(fd, length: length) }) { id in
            guard let id else { return }
            // The descriptor stays open while mapped; a dup keeps reading it back.
            if mappedFDs[id] == nil { mappedFDs[id] = dup(fd) }
            inodes[id]?.mapped = true
        }
    }

    deinit {
        for fd in mappedFDs.values { close(fd) }
    }

    // MARK: Crash states

    /// Which version each sector takes in a crash state.
    enum Choice {
        /// What was synced (and, for sizes grown by writes, the data up to them).
        case synced
        /// Everything written: what `kill -9` leaves.
        case latest
        /// Any version per sector; a size grown by writes keeps its data (ext4 `data=ordered`, xfs).
        case random
        /// Any version per sector, sizes without their data too (POSIX's
        /// minimum, ext4 `data=writeback`): unsynced writes are simply gone.
        case strict
    }

    /// Writes into `directory` the files a power cut at `points[index]` could
    /// leave: a metadata prefix of `metadataLength` (clamped to what is
    /// allowed), each unsynced sector chosen by `choice`.
    func materialize(point index: Int, metadataLength: Int?, choice: Choice, random: inout SplitMix64, into directory: String) throws {
        let point = lock.withLock { points[index] }
        let log = lock.withLock { Array(metadata[..<point.metadataCount]) }
        let length = min(max(metadataLength ?? point.metadataCount, point.metadataFloor), point.metadataCount)
        var names: [String: Int] = [:]
        var sizes: [Int: (size: Int, ordered: (generation: Int, versions: [Int: Int])?)] = [:]
        for change in log[..<length] {
            switch change {
            case .link(let path, let inode): names[path] = inode
            case .rename(let from, let to):
                if let inode = names.removeValue(forKey: from) { names[to] = inode }
            case .unlink(let path): names[path] = nil
            case .size(let inode, let size, let ordered): sizes[inode] = (size, ordered)
            }
        }
        for (path, inode) in names {
            guard let state = point.inodes[inode], path.hasPrefix(root) else { continue }
            let size = sizes[inode]?.size ?? state.durable.count
            var bytes = [UInt8](repeating: 0, count: size)
            let keep = min(size, state.durable.count)
            bytes.replaceSubrange(0..<keep, with: state.durable[..<keep])
            let ordered = sizes[inode]?.ordered
            for (sector, versions) in state.versions {
                let start = sector * Self.sector
                guard start < size else { continue }
                // data=ordered: a size grown by writes comes with the data written up to it.
                var minimum = 0
                if let ordered, ordered.generation == state.generation, choice != .strict {
                    minimum = min(ordered.versions[sector] ?? 0, versions.count)
                }
                var pick: Int  // 0: synced, k: versions[k - 1]
                switch choice {
                case .synced: pick = minimum
                case .latest: pick = versions.count
                case .random, .strict: pick = minimum + Int(random.next() % UInt64(versions.count - minimum + 1))
                }
                pick = max(pick, minimum)
                guard pick > 0 else { continue }
                let version = versions[pick - 1]
                // A version shorter than the sector: the file was shorter then; zeros after.
                let content = version + [UInt8](repeating: 0, count: Self.sector - version.count)
                let end = min(start + Self.sector, size)
                bytes.replaceSubrange(start..<end, with: content[..<(end - start)])
            }
            let relative = String(path.dropFirst(root.count))
            let target = directory + relative
            try FileManager.default.createDirectory(
                atPath: String(target[..<target.lastIndex(of: "/")!]), withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: target))
        }
    }

    /// The recorded syncs, renames and unlinks.
    var recordedEvents: [(point: Int, kind: String, path: String)] { lock.withLock { events } }

    /// The metadata floor and count of a point.
    func bounds(of index: Int) -> (floor: Int, count: Int) {
        lock.withLock { (points[index].metadataFloor, points[index].metadataCount) }
    }
}

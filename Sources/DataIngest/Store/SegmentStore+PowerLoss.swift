import IngestCore
#if canImport(Glibc)
import Glibc
#endif

extension SegmentStore {
    /// The size of a disk sector: the unit in which a power cut keeps or loses
    /// what was written to a file but not synced.
    static let sectorSize = 512

    /// Whether the bytes of an active segment that fail to verify after `offset`
    /// are what a power cut leaves of writes that were never synced, rather
    /// than damage: the bytes from `offset` to the end of the failing frame
    /// (or, in an encrypted file, block) overlap a whole disk sector of zeros.
    ///
    /// An active segment only ever grows into zeros (preallocated space, or
    /// the end of the file), so after a power cut each of its unsynced sectors
    /// holds either what was written there or still zeros, in any
    /// combination: a group of transactions whose first sector reached the
    /// disk and whose next one did not fails its checksum there. Damage to
    /// written data (a changed byte) leaves no sector of zeros inside a frame,
    /// and is still quarantined. The price, as with a zeroed frame type byte
    /// (Docs/SegmentFormat.md): a sector of a synced frame that the disk
    /// itself replaced with zeros is cut without a report.
    ///
    /// - Parameters:
    ///   - offset: where the valid stream ends (after the last commit).
    ///   - failure: where the frame that failed starts, when known (the
    ///     reader's error offset; in an encrypted file the failing block
    ///     starts at `offset`).
    static func isUnsyncedTail(path: String, at offset: Int, failure: Int?, fileSize: Int, encrypted: Bool) -> Bool {
        let frame = encrypted ? offset : max(failure ?? offset, offset)
        guard offset < fileSize, frame < fileSize else { return false }
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return false }
        defer { Glibc.close(fd) }
        // The failing frame's (or block's) extent, from its length field.
        var head = [UInt8](repeating: 0, count: 5)
        let got = head.withUnsafeMutableBytes { pread(fd, $0.baseAddress, 5, off_t(frame)) }
        var end = fileSize
        // A frame (block) header of zeros was never written: no frame is empty.
        if got == 5 && head[..<4].allSatisfy({ $0 == 0 }) { return true }
        if got == 5 {
            let length = Int(UInt32(head[1]) | UInt32(head[2]) << 8 | UInt32(head[3]) << 16 | UInt32(head[4]) << 24)
            let blockLength = Int(UInt32(head[0]) | UInt32(head[1]) << 8 | UInt32(head[2]) << 16 | UInt32(head[3]) << 24)
            end = encrypted ? frame + 17 + blockLength + 16 : frame + SegmentFormat.frameOverhead + length
            end = min(max(end, frame + 1), fileSize)
        }
        var sector = [UInt8](repeating: 0, count: sectorSize)
        var start = offset / sectorSize * sectorSize
        while start < end {
            let n = sector.withUnsafeMutableBytes { pread(fd, $0.baseAddress, sectorSize, off_t(start)) }
            guard n > 0 else { return false }
            // A sector cut short by the end of the file counts when it is whole zeros so far.
            if sector[..<n].allSatisfy({ $0 == 0 }) { return true }
            start += sectorSize
        }
        return false
    }
}

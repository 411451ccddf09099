// `sync-client-child exit-while-sealing N`: commits N numbered readings in
// transactions of 100, waits until the store's sealer has written a
// `N.seg.gz.tmp` and is about to rename it (the file system below stalls
// that rename for good), then calls exit(0). The exit grace period (1 s)
// tries to upload and ends although the seal never finishes. The test then
// runs `drain` and checks every reading arrived exactly once.
import DataIngest
import Dispatch
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// The real file system, except that renaming a sealed segment into place
/// signals `sealing` and never returns: the process exits in the middle of a seal.
struct StallingSealFileSystem: StoreFileSystem {
    let real = PosixFileSystem()
    let sealing: DispatchSemaphore
    func write(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Int { real.write(fd, bytes) }
    func fdatasync(_ fd: Int32) -> Int32 { real.fdatasync(fd) }
    func fsync(_ fd: Int32) -> Int32 { real.fsync(fd) }
    func ftruncate(_ fd: Int32, _ length: Int) -> Int32 { real.ftruncate(fd, length) }
    func rename(_ from: String, _ to: String) -> Int32 {
        guard from.hasSuffix(".seg.gz.tmp") else { return real.rename(from, to) }
        sealing.signal()
        while true { sleep(3600) }
    }
}

@MainActor
func exitWhileSealing(appId: String) async -> Int32 {
    let total = Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 3000
    let sealing = DispatchSemaphore(value: 0)
    var configuration = App.Configuration()
    configuration.segmentStore.fileSystem = StallingSealFileSystem(sealing: sealing)
    configuration.exitUploadGracePeriod = 1
    let app = App(id: appId, configuration: configuration)
    do {
        let user = try await app.login(credentials: .anonymous)
        var config = user.flexibleSyncConfiguration()
        config.objectTypes = [Reading.self]
        let realm = try await Realm(configuration: config)
        var seq = 0
        while seq < total {
            let end = min(total, seq + 100)
            try realm.write {
                for n in seq..<end {
                    realm.create(Reading.self, value: ["_id": ObjectId.generate(), "seq": n, "payload": "reading \(n)"])
                }
            }
            seq = end
        }
        print("committed \(total)")
        fflush(nil)
        // The store seals by age (about a second after the first commit).
        let signalled = await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: sealing.wait(timeout: .now() + 20) == .success) }
        }
        guard signalled else {
            print("no seal started within 20 s")
            return 1
        }
        print("sealing")
        fflush(nil)
        exit(0)
    } catch {
        print("failed: \(error)")
        return 1
    }
}

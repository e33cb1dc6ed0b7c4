import Logging
import ServiceLifecycle
import SesameServer

/// At start, seals the blobs an earlier Sesame stored in clear (see `BlobStore.sealStoredInClear`);
/// until one is sealed, delivery answers 404 for it. Retries while PostgreSQL does not answer.
struct BlobSealer: Service {
    let blobs: BlobStore
    let migrations: MigrationService
    let logger: Logger
    var retryInterval: Duration = .seconds(30)

    func run() async throws {
        // The column it reads from is the schema's; on a first start it does not exist yet.
        try? await cancelWhenGracefulShutdown { try await migrations.waitUntilComplete() }
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                let sealed = try await blobs.sealStoredInClear()
                if sealed > 0 { logger.notice("sealed blobs stored in clear by an earlier version", metadata: ["blobs": "\(sealed)"]) }
                break
            } catch {
                logger.error("could not seal blobs stored in clear; retrying", metadata: ["error": "\(String(reflecting: error))"])
                try? await cancelWhenGracefulShutdown { [retryInterval] in try await Task.sleep(for: retryInterval) }
            }
        }
        // A service that returns stops the others; this one's work is done, so it waits with them.
        try? await gracefulShutdown()
    }
}

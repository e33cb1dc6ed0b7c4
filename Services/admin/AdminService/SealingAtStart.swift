import Logging
import ServiceLifecycle
import SesameServer

/// At start, seals again what an earlier Sesame stored under weaker terms: blobs stored in clear
/// (`BlobStore.sealStoredInClear`; until sealed, delivery answers 404 for them) and relay headers
/// sealed before they were bound to their upstream's origin (`RelayStore.bindUnboundHeaders`; until
/// bound, delivery serves the relay as unusable). Each job retries while PostgreSQL does not answer.
struct SealingAtStart: Service {
    /// One job: what it seals (for the log) and the work, which returns how many it sealed.
    struct Job: Sendable {
        let what: String
        let run: @Sendable () async throws -> Int
    }

    let jobs: [Job]
    let migrations: MigrationService
    let logger: Logger
    var retryInterval: Duration = .seconds(30)

    func run() async throws {
        // The columns they read are the schema's; on a first start they do not exist yet.
        try? await cancelWhenGracefulShutdown { try await migrations.waitUntilComplete() }
        for job in jobs {
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    let sealed = try await job.run()
                    if sealed > 0 { logger.notice("sealed \(job.what) stored by an earlier version", metadata: ["count": "\(sealed)"]) }
                    break
                } catch {
                    logger.error("could not seal \(job.what) stored by an earlier version; retrying", metadata: ["error": "\(String(reflecting: error))"])
                    try? await cancelWhenGracefulShutdown { [retryInterval] in try await Task.sleep(for: retryInterval) }
                }
            }
        }
        // A service that returns stops the others; this one's work is done, so it waits with them.
        try? await gracefulShutdown()
    }
}

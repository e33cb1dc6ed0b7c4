import Logging
import ServiceLifecycle
import SesameEventBus
import SesameEvents
import SesameStorage

/// Keeps `DeliveryCache` right: a full load from PostgreSQL at start and every `resyncInterval`
/// (repairing anything missed while Kafka was away), and an app's reload as soon as an event about
/// it arrives. Every event is handled by reloading from PostgreSQL, which is where it came from, so
/// handling one twice, late or out of order does no harm.
struct CacheSynchronizer: Service {
    let cache: DeliveryCache
    let loader: DeliveryLoader
    let tokens: AccessTokenVerifier
    let events: EventStream
    let logger: Logger
    var resyncInterval: Duration = .seconds(30)

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await resyncPeriodically() }
            group.addTask { await followEvents() }
            await group.waitForAll()
        }
    }

    private func resyncPeriodically() async {
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            do {
                let (cache, loader, tokens) = (cache, loader, tokens)
                try await cancelWhenGracefulShutdown {
                    try await withTimeout(.seconds(30)) {
                        let start = cache.beginResync()
                        cache.finishResync(start, states: try await loader.loadAll(previous: cache.allConfigs()))
                        try await tokens.reloadKeys()
                    }
                }
            } catch {
                // Cached state keeps being served; readiness reports PostgreSQL.
                logger.warning("delivery resync failed; serving cached state", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { [resyncInterval] in try await Task.sleep(for: resyncInterval) }
        }
    }

    private func followEvents() async {
        for await envelope in events.cancelOnGracefulShutdown() {
            do {
                if case .signingKeyRotated = envelope.event {
                    try await tokens.reloadKeys()
                } else if let appID = envelope.appID {
                    cache.replace(appID, with: try await loader.load(appID: appID, previous: cache.configs(of: appID)))
                }
            } catch {
                // The next resync repairs it.
                logger.warning("could not apply an event; the next resync will", metadata: ["event.type": "\(envelope.event.type)", "error": "\(error)"])
            }
        }
    }
}

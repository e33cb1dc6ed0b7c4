import Logging
import Metrics
import ServiceLifecycle
import SesameEventBus
import SesameEvents
import SesameStorage

/// Keeps `DeliveryCache` right: a full load from PostgreSQL at start, every `resyncInterval`, once
/// the event consumer is assigned and whenever the broker answers again after an outage (repairing
/// anything written before the consumer read or while Kafka was away), and an app's reload as soon
/// as an event about it arrives. Every event is handled by reloading from PostgreSQL, which is
/// where it came from, so handling one twice, late or out of order does no harm.
struct CacheSynchronizer: Service {
    let cache: DeliveryCache
    let loader: DeliveryLoader
    let tokens: AccessTokenVerifier
    let events: EventStream
    /// The event consumer's assignment and reconnections: moments to catch up from PostgreSQL.
    let reconnections: AsyncStream<Void>
    let logger: Logger
    var resyncInterval: Duration = .seconds(30)

    func run() async throws {
        // One loop runs every full resync, so two never race; requests made meanwhile coalesce.
        let (requests, request) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await resync(on: requests) }
            group.addTask {
                while !Task.isShuttingDownGracefully, !Task.isCancelled {
                    request.yield()
                    try? await cancelWhenGracefulShutdown { [resyncInterval] in try await Task.sleep(for: resyncInterval) }
                }
                request.finish()
            }
            group.addTask {
                for await _ in reconnections.cancelOnGracefulShutdown() {
                    logger.info("kafka consumer assigned or back; resyncing from postgresql for what it did not read")
                    request.yield()
                }
            }
            group.addTask { await followEvents() }
            await group.waitForAll()
        }
    }

    /// Runs a full resync per request. One that fails (PostgreSQL away, or at start the schema
    /// not migrated yet) is retried soon, backing off to the interval: until the first load
    /// succeeds the instance is not ready.
    private func resync(on requests: AsyncStream<Void>) async {
        for await _ in requests.cancelOnGracefulShutdown() {
            var failures = 0
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    try await resyncOnce()
                    break
                } catch {
                    // Cached state keeps being served; readiness reports PostgreSQL.
                    logger.warning("delivery resync failed; serving cached state", metadata: ["error": "\(String(reflecting: error))"])
                    failures += 1
                    let pause = min(.milliseconds(250) * (1 << min(failures - 1, 12)), resyncInterval)
                    try? await cancelWhenGracefulShutdown { try await Task.sleep(for: pause) }
                }
            }
        }
    }

    private func resyncOnce() async throws {
        let (cache, loader, tokens) = (cache, loader, tokens)
        try await cancelWhenGracefulShutdown {
            try await withTimeout(.seconds(30)) {
                let start = cache.beginResync()
                let loaded = try await loader.loadAll(previous: cache.allConfigs())
                reportingFailures { cache.finishResync(start, loaded: loaded) }
                try await tokens.reloadKeys()
            }
        }
    }

    /// Applies a load to the cache, then logs each app that started or stopped failing to load
    /// and counts the failing ones.
    private func reportingFailures(_ apply: () -> Void) {
        let before = cache.failing
        apply()
        let now = cache.failing
        for (appID, reason) in now where before[appID] != reason {
            logger.error(
                "cannot load this app's state; it is served from what was held, or answered 503 app_unavailable",
                metadata: ["app": "\(appID)", "reason": "\(reason)"])
        }
        for appID in before.keys where now[appID] == nil {
            logger.info("app loads again", metadata: ["app": "\(appID)"])
        }
        Gauge(label: "sesame_delivery_apps_failing").record(now.count)
    }

    private func followEvents() async {
        for await envelope in events.cancelOnGracefulShutdown() {
            do {
                if case .signingKeyRotated = envelope.event {
                    try await tokens.reloadKeys()
                } else if let appID = envelope.appID {
                    let loaded = try await loader.loadAll(only: appID, previous: [appID: cache.configs(of: appID)])
                    reportingFailures { cache.replace(appID, with: loaded) }
                }
            } catch {
                // The next resync repairs it.
                logger.warning("could not apply an event; the next resync will", metadata: ["event.type": "\(envelope.event.type)", "error": "\(String(reflecting: error))"])
            }
        }
    }
}

import Logging
import Metrics
import ServiceLifecycle
import SesameConfiguration
import SesameEventBus
import SesameEvents
import SesameServer
import SesameStorage

/// Keeps `DeliveryCache` right: a full load from PostgreSQL at start; a resync of the apps changed
/// since the last one every `resyncInterval`, once the event consumer is assigned and whenever the
/// broker answers again after an outage (repairing anything written before the consumer read or
/// while Kafka was away); and an app's reload as soon as an event about it arrives. Every event is
/// handled by reloading from PostgreSQL, which is where it came from, so handling one twice, late
/// or out of order does no harm.
///
/// A resync reads what changed since a watermark (`DeliveryLoader.changes`), so an idle system's
/// resync costs one indexed read, however many apps and revisions it holds.
struct CacheSynchronizer: Service {
    let cache: DeliveryCache
    let loader: DeliveryLoader
    let tokens: AccessTokenVerifier
    let events: EventStream
    /// The event consumer's assignment and reconnections: moments to catch up from PostgreSQL.
    let reconnections: AsyncStream<Void>
    /// The schema's migrations: the first load waits for them rather than failing against a
    /// schema that is not there yet.
    let migrations: MigrationService
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
            group.addTask { await followEvents(requestingResync: request) }
            await group.waitForAll()
        }
    }

    /// Runs a full resync per request, once the schema is migrated. One that fails (PostgreSQL
    /// away) is retried soon, backing off to the interval: until the first load succeeds the
    /// instance is not ready.
    private func resync(on requests: AsyncStream<Void>) async {
        // Before the migrations every load would fail, and say so in the log: wait for them.
        guard (try? await cancelWhenGracefulShutdown({ try await migrations.waitUntilComplete() })) != nil else { return }
        // Where the last resync read up to; nil until the first full load.
        var watermark: Int64?
        for await _ in requests.cancelOnGracefulShutdown() {
            var failures = 0
            while !Task.isShuttingDownGracefully, !Task.isCancelled {
                do {
                    watermark = try await resyncOnce(from: watermark)
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

    /// Loads the apps changed since `watermark` and those that failed to load, and the signing
    /// keys; everything when there is no watermark yet, or when PostgreSQL's history is behind it
    /// (a database restored from a backup). Returns the next watermark.
    private func resyncOnce(from watermark: Int64?) async throws -> Int64 {
        let (cache, loader, tokens) = (cache, loader, tokens)
        return try await cancelWhenGracefulShutdown {
            try await withTimeout(.seconds(30)) {
                let clock = ContinuousClock()
                let began = clock.now
                let start = cache.beginResync()
                let (next, changed) = try await loader.changes(since: watermark)
                var scope: Set<String>?
                if let watermark, next >= watermark { scope = Set(changed).union(cache.failing.keys) }
                var loaded = DeliveryLoader.Loaded()
                if let scope {
                    if !scope.isEmpty { loaded = try await loader.loadAll(only: Array(scope), previous: cache.configs(of: scope)) }
                } else {
                    loaded = try await loader.loadAll(previous: cache.allConfigs())
                }
                // Given up on at its limit, a resync must not overwrite a later one's state.
                try Task.checkCancellation()
                reportingFailures { cache.finishResync(start, loaded: loaded, scope: scope) }
                try await tokens.reloadKeys()
                DeliveryMetrics.resynced(
                    seconds: (clock.now - began).inSeconds, appsLoaded: scope?.count ?? loaded.states.count, rowsRead: loaded.rowsRead + 1)
                return next
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

    /// Applies each event as it comes; one that cannot be applied (PostgreSQL away, or a step
    /// that does not end) asks for a resync, which retries until it succeeds.
    private func followEvents(requestingResync request: AsyncStream<Void>.Continuation) async {
        let (cache, loader, tokens) = (cache, loader, tokens)
        for await envelope in events.cancelOnGracefulShutdown() {
            do {
                try await EventTracing.applying(envelope) {
                    try await withTimeout(Self.eventTimeout) {
                        if case .signingKeyRotated = envelope.event {
                            try await tokens.reloadKeys()
                        } else if let appID = envelope.appID {
                            let loaded = try await loader.loadAll(only: [appID], previous: cache.configs(of: [appID]))
                            // Given up on (and so cancelled), a late load must not overwrite what a
                            // resync has written since.
                            try Task.checkCancellation()
                            reportingFailures { cache.replace(appID, with: loaded) }
                            DeliveryMetrics.propagated(since: envelope.occurredAt)
                        }
                    }
                }
            } catch {
                logger.warning("could not apply an event; resyncing", metadata: ["event.type": "\(envelope.event.type)", "error": "\(String(reflecting: error))"])
                request.yield()
            }
        }
    }

    /// The longest one event's reload may take before a resync is asked to do it instead.
    static let eventTimeout: Duration = .seconds(5)
}

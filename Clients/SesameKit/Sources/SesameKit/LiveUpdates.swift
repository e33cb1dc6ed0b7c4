import Foundation

extension SesameClient {
    /// The notifications on which `updates(scope:)` asks Sesame again: the app coming to the
    /// foreground (UIKit's `willEnterForegroundNotification`, AppKit's `willBecomeActiveNotification`,
    /// by their names, so nothing here needs UIKit or the main actor).
    public static let foregroundNotifications: [Notification.Name] = [
        Notification.Name("UIApplicationWillEnterForegroundNotification"), Notification.Name("NSApplicationWillBecomeActiveNotification"),
    ]

    /// The app's config now and every time it changes, for as long as the app iterates: live config.
    ///
    /// ```swift
    /// for try await config in client.updates(scope: ["features"]) {
    ///     checkoutEnabled = config.bool("features.checkout", default: false)
    /// }
    /// ```
    ///
    /// The first element is what `fetchConfig(scope:)` returns. Then SesameKit holds Sesame's
    /// stream of change notices (`GET /v1/config/updates`, server-sent events) open and refetches
    /// when told (a publish, a rollback, a revocation reach a running app within a second), asks
    /// again whenever the app comes to the foreground, and reconnects after a lost connection
    /// (backing off to a minute) or an expired token. A transport that cannot stream is polled every
    /// minute instead. Only changed configs are yielded.
    ///
    /// The sequence ends by throwing `SesameError.versionDisabled(reason:)` when a kill switch
    /// covers the version (pushed, not waited for), and throws what the first fetch throws. Other
    /// failures (offline, Sesame unavailable) do not end it: the last config stands until Sesame
    /// answers again. Stop iterating (or cancel the task) to close the stream.
    public nonisolated func updates(scope: [String] = []) -> AsyncThrowingStream<SesameConfig, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SesameConfig.self)
        let follower = Task { await self.follow(scope: scope, emitter: ConfigEmitter(continuation)) }
        continuation.onTermination = { _ in follower.cancel() }
        return stream
    }

    private func follow(scope: [String], emitter: ConfigEmitter) async {
        do { emitter.emit(try await fetchConfig(scope: scope)) } catch {
            emitter.finish(throwing: error)
            return
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.revalidateOnForeground(scope: scope, emitter: emitter) }
            group.addTask { await self.listen(scope: scope, emitter: emitter) }
            // Listening ends only at a kill switch or cancellation; then so does the rest.
            await group.next()
            group.cancelAll()
        }
        emitter.finish(throwing: nil)
    }

    /// Refetches on each foreground notification until cancelled.
    private func revalidateOnForeground(scope: [String], emitter: ConfigEmitter) async {
        for await _ in Self.foregroundNotices() {
            await refetch(scope: scope, into: emitter)
        }
    }

    /// Follows the change notices (or polls) until a kill switch ends it or the task is cancelled.
    private func listen(scope: [String], emitter: ConfigEmitter) async {
        var failures = 0
        while !Task.isCancelled, !emitter.isFinished {
            guard let transport = api.transport as? any HTTPStreamingTransport else {
                try? await clock.sleep(.seconds(60))
                await refetch(scope: scope, into: emitter)
                continue
            }
            if await follow(notices: transport, scope: scope, emitter: emitter) {
                failures = 0
            } else {
                failures += 1
                // 1, 2, 4 … 60 s, and up to a second of jitter so a fleet does not return in step.
                let backoff = min(60, 1 << min(failures - 1, 6))
                try? await clock.sleep(.seconds(backoff) + .milliseconds(Int.random(in: 0..<1000)))
            }
        }
    }

    /// One connection to the notices. Returns whether it ended well (the server closed it, the token
    /// expired): false when it failed, so the next attempt backs off.
    private func follow(notices transport: any HTTPStreamingTransport, scope: [String], emitter: ConfigEmitter) async -> Bool {
        let token: String
        do { token = try await accessToken() } catch { return false }
        var query = [URLQueryItem(name: "version", value: configuration.appVersion)]
        if !scope.isEmpty { query.append(URLQueryItem(name: "scope", value: scope.joined(separator: ","))) }
        var headers = ["authorization": "Bearer " + token, "accept": "text/event-stream"]
        if let etag = savedETag(scope: scope) { headers["last-event-id"] = etag }
        do {
            let request = try api.request("GET", "v1/config/updates", query: query, headers: headers)
            let (head, body) = try await transport.stream(request)
            guard head.status == 200 else {
                if head.status == 401 { await discard(token) }
                // What the config route says explains the refusal (a kill switch ends the updates).
                await refetch(scope: scope, into: emitter)
                return head.status == 401
            }
            var parser = ServerSentEventParser()
            for try await chunk in body {
                for event in parser.feed(chunk) {
                    switch event.event {
                    case "config":
                        if event.id != savedETag(scope: scope) { await refetch(scope: scope, into: emitter) }
                    case "no_config":
                        await refetch(scope: scope, into: emitter)
                    case "version_disabled", "refused":
                        if event.event == "refused" { await discard(token) }
                        await refetch(scope: scope, into: emitter)
                        return true
                    case "token_expired":
                        await discard(token)
                        return true
                    default:
                        break
                    }
                    if emitter.isFinished { return true }
                }
            }
            return true
        } catch {
            return false
        }
    }

    /// Asks Sesame and yields what changed; a kill switch ends the updates, other failures leave
    /// the last config standing.
    private func refetch(scope: [String], into emitter: ConfigEmitter) async {
        do {
            emitter.emit(try await refetch(scope: scope))
        } catch {
            if case .versionDisabled = error { emitter.finish(throwing: error) }
        }
    }

    /// The foreground notifications, as an `AsyncStream` that stops observing when it ends.
    private static func foregroundNotices() -> AsyncStream<Void> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let center = NotificationCenter.default
            let observers = Observers(
                foregroundNotifications.map { center.addObserver(forName: $0, object: nil, queue: nil) { _ in continuation.yield() } })
            continuation.onTermination = { _ in
                for observer in observers.tokens { center.removeObserver(observer) }
            }
        }
    }
}

/// The observation tokens `NotificationCenter` returns, kept to remove them.
private final class Observers: @unchecked Sendable {
    // @unchecked: set once at init, only read after.
    let tokens: [any NSObjectProtocol]
    init(_ tokens: [any NSObjectProtocol]) { self.tokens = tokens }
}

/// Yields configs that differ from the last one yielded, and finishes once.
final class ConfigEmitter: Sendable {
    private let continuation: AsyncThrowingStream<SesameConfig, any Error>.Continuation
    private let state = Locked<(last: SesameConfig?, finished: Bool)>((nil, false))

    init(_ continuation: AsyncThrowingStream<SesameConfig, any Error>.Continuation) {
        self.continuation = continuation
    }

    var isFinished: Bool { state.withLock { $0.finished } }

    func emit(_ config: SesameConfig) {
        let fresh = state.withLock { state -> Bool in
            guard !state.finished, state.last != config else { return false }
            state.last = config
            return true
        }
        if fresh { continuation.yield(config) }
    }

    func finish(throwing error: (any Error)?) {
        let first = state.withLock { state -> Bool in
            defer { state.finished = true }
            return !state.finished
        }
        if first { continuation.finish(throwing: error) }
    }
}

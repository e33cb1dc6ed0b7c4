import Foundation

extension SesameClient {
    /// The notifications on which `updates(scope:)` asks Sesame again: the app coming to the
    /// foreground (UIKit's `willEnterForegroundNotification`, AppKit's `willBecomeActiveNotification`,
    /// by their names, so nothing here needs UIKit or the main actor).
    public static let foregroundNotifications: [Notification.Name] = [
        Notification.Name("UIApplicationWillEnterForegroundNotification"), Notification.Name("NSApplicationWillBecomeActiveNotification"),
    ]

    /// The notification on which `updates(scope:)` closes its stream: an iOS app entering the
    /// background (UIKit's `didEnterBackgroundNotification`), whose sockets iOS defuncts once it is
    /// suspended. A Mac app is not suspended, and keeps its stream.
    public static let backgroundNotifications: [Notification.Name] = [Notification.Name("UIApplicationDidEnterBackgroundNotification")]

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
    /// again whenever the app comes to the foreground, and reconnects after a lost connection or
    /// an expired token. The stream's first notice is always asked about, so a config revalidated
    /// in the background since the first element is yielded too. A transport that cannot stream is polled every
    /// minute instead. Only changed configs are yielded.
    ///
    /// The sequence ends by throwing `SesameError.versionDisabled(reason:)` when a kill switch
    /// covers the version (pushed, not waited for), `SesameError.server(code:message:)` when Sesame
    /// refuses the stream in a way that would only repeat (a 4xx other than 401 and 429), and
    /// throws what the first fetch throws. Other failures (offline, Sesame unavailable, 429, 5xx,
    /// a stream closed at once) do not end it: the last config stands and the stream is tried
    /// again, backing off 1, 2, 4 … 60 s with jitter (a connection that lasted 30 s starts the
    /// backoff over). Stop iterating (or cancel the task) to close the stream.
    ///
    /// Every sequence of one scope shares one connection: a second observer (another view) joins
    /// the first's, and gets the last config at once.
    public nonisolated func updates(scope: [String] = []) -> AsyncThrowingStream<SesameConfig, any Error> {
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: SesameConfig.self)
        let key = scope.sorted().joined(separator: ",")
        let id = UUID()
        let (emitter, isNew) = liveConfigs.withLock { emitters -> (ConfigEmitter, Bool) in
            if let running = emitters[key], running.add(id, continuation) { return (running, false) }
            let emitter = ConfigEmitter()
            _ = emitter.add(id, continuation)
            emitters[key] = emitter
            return (emitter, true)
        }
        continuation.onTermination = { _ in emitter.remove(id) }
        if isNew { emitter.start(Task { await self.follow(scope: scope, emitter: emitter) }) }
        return stream
    }

    private func follow(scope: [String], emitter: ConfigEmitter) async {
        do { emitter.emit(try await fetchConfig(scope: scope)) } catch {
            emitter.finish(throwing: error)
            return
        }
        let lifecycle = StreamLifecycle()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await _ in Self.notices(Self.backgroundNotifications) { lifecycle.enterBackground() }
            }
            group.addTask { await self.revalidateOnForeground(scope: scope, emitter: emitter, lifecycle: lifecycle) }
            group.addTask { await self.listen(scope: scope, emitter: emitter, lifecycle: lifecycle) }
            // Listening ends only at a kill switch or cancellation; then so does the rest.
            await group.next()
            group.cancelAll()
        }
        emitter.finish(throwing: nil)
    }

    /// On each foreground notification, until cancelled: the stream may open again, and Sesame is asked.
    private func revalidateOnForeground(scope: [String], emitter: ConfigEmitter, lifecycle: StreamLifecycle) async {
        for await _ in Self.notices(Self.foregroundNotifications) {
            lifecycle.enterForeground()
            await refetch(scope: scope, into: emitter)
        }
    }

    /// A connection to the notices that lasted this long was healthy: the backoff starts over.
    /// One that ended sooner counts as a failure, or a server that closes every stream at once
    /// (or refuses it in its first event) would be reconnected to in a loop.
    static let healthyConnection: TimeInterval = 30

    /// Follows the change notices (or polls) until a kill switch or a lasting refusal ends it, or
    /// the task is cancelled. Failures back off 1, 2, 4 … 60 s with jitter; a minute of a failing
    /// server costs a handful of requests.
    private func listen(scope: [String], emitter: ConfigEmitter, lifecycle: StreamLifecycle) async {
        var failures = 0
        while !Task.isCancelled, !emitter.isFinished {
            guard let transport = api.transport as? any HTTPStreamingTransport else {
                try? await clock.sleep(.seconds(60))
                await refetch(scope: scope, into: emitter)
                continue
            }
            // In the background no stream is held; back in the foreground one opens at once.
            await lifecycle.untilForeground()
            let foregrounds = lifecycle.foregrounds
            let opened = clock.now()
            let end = await lifecycle.connect { await self.follow(notices: transport, scope: scope, emitter: emitter) }
            if Task.isCancelled { return }
            if lifecycle.inBackground || lifecycle.foregrounds != foregrounds {
                // Closed for the background, not failed: no backoff, and it starts over.
                failures = 0
                continue
            }
            switch end {
            case .stopped:
                return
            case .ended where clock.now().timeIntervalSince(opened) >= Self.healthyConnection:
                failures = 0
                continue
            case .ended, .failed:
                failures += 1
            }
            // 1, 2, 4 … 60 s, and up to a second of jitter so a fleet does not return in step; a
            // return to the foreground meanwhile opens the stream at once.
            let backoff = min(60, 1 << min(failures - 1, 6))
            try? await clock.sleep(.seconds(backoff) + .milliseconds(Int.random(in: 0..<1000)))
            if lifecycle.foregrounds != foregrounds { failures = 0 }
        }
    }

    /// How one connection to the notices ended.
    enum NoticeStreamEnd {
        /// The server closed it, or told the client to come back (an expired token).
        case ended
        /// It failed: the network, or a refusal that may pass (429, 5xx).
        case failed
        /// The updates are over: a kill switch, or a refusal that will repeat (finished with it).
        case stopped
    }

    /// One connection to the notices.
    private func follow(notices transport: any HTTPStreamingTransport, scope: [String], emitter: ConfigEmitter) async -> NoticeStreamEnd {
        let token: String
        do { token = try await accessToken() } catch { return .failed }
        var query = [URLQueryItem(name: "version", value: configuration.appVersion)]
        if !scope.isEmpty { query.append(URLQueryItem(name: "scope", value: scope.joined(separator: ","))) }
        var headers = ["authorization": "Bearer " + token, "accept": "text/event-stream"]
        if let etag = savedETag(scope: scope) { headers["last-event-id"] = etag }
        do {
            let request = try api.request("GET", "v1/config/updates", query: query, headers: headers)
            let (head, body) = try await transport.stream(request)
            guard head.status == 200 else {
                var collected = Data()
                for try await chunk in body where collected.count < 4096 { collected.append(chunk) }
                let (code, message) = SesameAPI.refusal(of: HTTPExchange.Response(status: head.status, headers: head.headers, body: collected))
                return await refused(status: head.status, code: code, message: message, token: token, scope: scope, emitter: emitter)
            }
            var parser = ServerSentEventParser()
            // The notices name the config they announce; the first is always asked about, so a
            // config revalidated in the background since the last one yielded is yielded too.
            var announced: String?
            for try await chunk in body {
                for event in parser.feed(chunk) {
                    switch event.event {
                    case "config":
                        if event.id == nil || event.id != announced { await refetch(scope: scope, into: emitter) }
                        announced = event.id
                    case "no_config":
                        await refetch(scope: scope, into: emitter)
                    case "version_disabled":
                        await refetch(scope: scope, into: emitter)
                        return emitter.isFinished ? .stopped : .ended
                    case "refused":
                        let refusal = Self.refusal(in: event.data)
                        return await refused(
                            status: refusal.status, code: refusal.code, message: refusal.message, token: token, scope: scope, emitter: emitter)
                    case "token_expired":
                        await discard(token)
                        return .ended
                    default:
                        break
                    }
                    if emitter.isFinished { return .stopped }
                }
            }
            return .ended
        } catch {
            return .failed
        }
    }

    /// What a refusal of the stream (at its head or in a `refused` event) means for the updates:
    /// a refused token is dropped and the stream tried again; a kill switch (asked of the config
    /// route, which says why) ends them; 429 and 5xx may pass; any other refusal would come back
    /// the same, so it ends the updates with `SesameError.server(code:message:)` instead of
    /// reconnecting for ever.
    private func refused(status: Int, code: String, message: String, token: String, scope: [String], emitter: ConfigEmitter) async -> NoticeStreamEnd {
        if status == 401 {
            await discard(token)
            return .ended
        }
        await refetch(scope: scope, into: emitter)
        if emitter.isFinished { return .stopped }
        if status == 429 || status >= 500 { return .failed }
        emitter.finish(throwing: SesameError.server(code: code, message: message))
        return .stopped
    }

    /// A `refused` event's data: `{"status":…,"code":…,"message":…}`.
    static func refusal(in data: String) -> (status: Int, code: String, message: String) {
        struct Refusal: Decodable {
            let status: Int
            let code: String
            let message: String?
        }
        guard let refusal = try? JSONDecoder().decode(Refusal.self, from: Data(data.utf8)) else {
            return (500, "stream_refused", "Sesame refused the update stream.")
        }
        return (refusal.status, refusal.code, refusal.message ?? "Sesame refused the update stream.")
    }

    /// Asks Sesame and yields what changed; a kill switch ends the updates, other failures leave
    /// the last config standing.
    private func refetch(scope: [String], into emitter: ConfigEmitter) async {
        do {
            let config = try await refetch(scope: scope)
            remember(config, scope: scope)
            emitter.emit(config)
        } catch {
            if case .versionDisabled = error { emitter.finish(throwing: error) }
        }
    }

    /// The notifications named `names`, as an `AsyncStream` that stops observing when it ends.
    private static func notices(_ names: [Notification.Name]) -> AsyncStream<Void> {
        AsyncStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let center = NotificationCenter.default
            let observers = Observers(
                names.map { center.addObserver(forName: $0, object: nil, queue: nil) { _ in continuation.yield() } })
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

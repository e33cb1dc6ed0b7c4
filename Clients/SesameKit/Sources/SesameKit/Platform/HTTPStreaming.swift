import Foundation

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Darwin)
// A no-op on Apple platforms; Tests/AppleTypeCheck's stub declares `bytes(for:)` there for Linux.
import Darwin
#endif

/// A transport that can hand a response's body over as it arrives: what live config
/// (`SesameClient.updates(scope:)`) reads Sesame's server-sent events with. A transport that cannot
/// stream still gets updates, by polling.
public protocol HTTPStreamingTransport: HTTPTransport {
    /// Sends `request`; returns the response's status and headers (an empty body) once they arrive,
    /// and its body as it arrives, in chunks ending at line breaks where the network allows.
    /// Cancelling the iteration closes the connection.
    func stream(_ request: HTTPExchange.Request) async throws -> (HTTPExchange.Response, AsyncThrowingStream<Data, any Error>)
}

extension URLSessionTransport: HTTPStreamingTransport {
    /// How long a stream may stay silent before the transport gives it up.
    static let streamIdleTimeout: TimeInterval = 35

    public func stream(_ request: HTTPExchange.Request) async throws -> (HTTPExchange.Response, AsyncThrowingStream<Data, any Error>) {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.httpMethod = request.method
        // Sesame sends a heartbeat every 10 s: three missed is a dead connection (one a suspension
        // or a network change left behind), noticed in 35 s instead of an hour.
        urlRequest.timeoutInterval = Self.streamIdleTimeout
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        // A relayed call's body (a completion request); live config's streams have none.
        urlRequest.httpBody = request.body
        let session = session
        let request = urlRequest
        let (head, headContinuation) = AsyncThrowingStream.makeStream(of: HTTPExchange.Response.self)
        let (body, bodyContinuation) = AsyncThrowingStream.makeStream(of: Data.self)
        let reader = Task {
            do {
                try await Self.read(request, on: session, heads: headContinuation, body: bodyContinuation)
                bodyContinuation.finish()
            } catch {
                headContinuation.finish(throwing: error)
                bodyContinuation.finish(throwing: error)
            }
        }
        bodyContinuation.onTermination = { _ in reader.cancel() }
        var heads = head.makeAsyncIterator()
        guard let response = try await heads.next() else {
            reader.cancel()
            throw URLError(.cancelled)
        }
        return (response, body)
    }

    static func head(of response: URLResponse) throws -> HTTPExchange.Response {
        guard let http = response as? HTTPURLResponse else { throw URLError(.badServerResponse) }
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name.lowercased()] = value }
        }
        return HTTPExchange.Response(status: http.statusCode, headers: headers)
    }

    // The Apple type-check (Tests/AppleTypeCheck) compiles Apple's branch on Linux.
    #if canImport(FoundationNetworking) && !SESAME_APPLE_TYPECHECK
    /// swift-corelibs-foundation has no `bytes(for:)`: a data task whose delegate passes chunks on.
    private static func read(
        _ request: URLRequest, on session: URLSession, heads: AsyncThrowingStream<HTTPExchange.Response, any Error>.Continuation,
        body: AsyncThrowingStream<Data, any Error>.Continuation
    ) async throws {
        let delegate = StreamingDelegate(head: heads, body: body)
        let streaming = URLSession(configuration: session.configuration, delegate: delegate, delegateQueue: nil)
        defer { streaming.invalidateAndCancel() }
        let task = streaming.dataTask(with: request)
        try await withTaskCancellationHandler {
            task.resume()
            try await delegate.finished()
        } onCancel: {
            task.cancel()
        }
    }
    #else
    /// `bytes(for:)` (iOS 15): the session's own delegate still answers its authentication
    /// challenges, so a pinned session stays pinned for the stream. `AsyncBytes.lines` drops empty
    /// lines, which end server-sent events: lines are cut here.
    private static func read(
        _ request: URLRequest, on session: URLSession, heads: AsyncThrowingStream<HTTPExchange.Response, any Error>.Continuation,
        body: AsyncThrowingStream<Data, any Error>.Continuation
    ) async throws {
        let (bytes, response) = try await session.bytes(for: request)
        heads.yield(try head(of: response))
        heads.finish()
        var line = Data()
        for try await byte in bytes {
            line.append(byte)
            if byte == 0x0A {
                body.yield(line)
                line.removeAll(keepingCapacity: true)
            }
        }
        if !line.isEmpty { body.yield(line) }
    }
    #endif
}

#if canImport(FoundationNetworking)
/// Passes a data task's response and chunks to the streams `stream(_:)` returns.
private final class StreamingDelegate: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the streams' continuations are thread-safe; `done` is read and written under `lock`.
    private let head: AsyncThrowingStream<HTTPExchange.Response, any Error>.Continuation
    private let body: AsyncThrowingStream<Data, any Error>.Continuation
    private let lock = NSLock()
    private var done: CheckedContinuation<Void, any Error>?
    private var outcome: Result<Void, any Error>?

    init(head: AsyncThrowingStream<HTTPExchange.Response, any Error>.Continuation, body: AsyncThrowingStream<Data, any Error>.Continuation) {
        self.head = head
        self.body = body
    }

    /// Returns when the task completes; throws its error.
    func finished() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            lock.lock()
            if let outcome {
                lock.unlock()
                continuation.resume(with: outcome)
            } else {
                done = continuation
                lock.unlock()
            }
        }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        do {
            head.yield(try URLSessionTransport.head(of: response))
            head.finish()
            completionHandler(.allow)
        } catch {
            head.finish(throwing: error)
            completionHandler(.cancel)
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        body.yield(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        lock.lock()
        let outcome: Result<Void, any Error> = error.map { .failure($0) } ?? .success(())
        self.outcome = outcome
        let waiting = done
        done = nil
        lock.unlock()
        if let error { head.finish(throwing: error) } else { head.finish() }
        waiting?.resume(with: outcome)
    }
}
#endif

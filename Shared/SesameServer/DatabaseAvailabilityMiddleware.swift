import Hummingbird
import Logging
import SesameHTTP
import SesameStorage

/// Answers 503 `service_unavailable` with `Retry-After` when a request cannot proceed because
/// PostgreSQL is away, instead of a 500 that reads like a bug — or, worse, a wait of a minute:
/// PostgresNIO's pool holds queries while it retries connecting, until its circuit breaker trips.
///
/// A request still running after `patience` triggers a short probe of the database, repeated every
/// `patience` while it runs; if the database does not answer, the request is cancelled (which
/// releases its place in the pool's queue) and answered 503. A request that fails with an error the
/// service did not render is blamed on the database only if the probe fails too. Paths served
/// from memory are left alone, so the hot path pays nothing.
struct DatabaseAvailabilityMiddleware<Context: RequestContext>: RouterMiddleware {
    let database: Database
    /// Paths that never wait on PostgreSQL (health, metrics, what a service serves from memory).
    let exemptPaths: [PathPrefix]
    var patience: Duration = .seconds(2)
    var probeTimeout: Duration = .seconds(1)

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard !exemptPaths.contains(where: { $0.covers(path) }) else {
            return try await next(request, context)
        }
        do {
            return try await withoutActuallyEscaping(next) { next in
                try await respondUnlessDatabaseStalls(request, context: context, next: UnsafeTransfer(next))
            }
        } catch let error where !(error is any HTTPResponseError) && !(error is CancellationError) {
            guard await database.isReachable(timeout: probeTimeout) else {
                context.logger.warning("request failed while postgresql is unreachable", metadata: ["error.type": "\(type(of: error))"])
                throw APIError.databaseUnavailable
            }
            throw error
        }
    }

    /// Runs the handler beside a watchdog that probes the database while the handler takes long.
    private func respondUnlessDatabaseStalls(
        _ request: Request, context: Context, next: UnsafeTransfer<(Request, Context) async throws -> Response>
    ) async throws -> Response {
        try await withThrowingTaskGroup(of: Response?.self) { group in
            group.addTask { try await next.value(request, context) }
            group.addTask { [database, patience, probeTimeout] in
                while true {
                    try await Task.sleep(for: patience)
                    guard await database.isReachable(timeout: probeTimeout) else {
                        context.logger.warning("request abandoned: postgresql is unreachable")
                        throw APIError.databaseUnavailable
                    }
                }
            }
            // The watchdog only ends by throwing (or by cancellation), so the first value is the response.
            while let result = try await group.next() {
                if let response = result {
                    group.cancelAll()
                    return response
                }
            }
            throw CancellationError()
        }
    }
}

/// Carries the request's non-escaping `next` into the handler's child task. Sound because the
/// task group never outlives `withoutActuallyEscaping`, and only that one task calls it.
private struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

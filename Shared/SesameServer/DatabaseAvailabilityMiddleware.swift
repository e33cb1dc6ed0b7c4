import Hummingbird
import Logging
import SesameHTTP
import SesameStorage

/// Answers 503 `service_unavailable` with `Retry-After` when a request cannot proceed because
/// PostgreSQL is away, instead of a 500 that reads like a bug — or, worse, a wait of a minute:
/// PostgresNIO's pool holds queries while it retries connecting, until its circuit breaker trips.
///
/// A request still running after the watch's `patience` while the database does not answer a probe
/// is cancelled by the watch (`DatabaseStallWatch`, one task for the service), which releases its
/// place in the pool's queue, and answered 503. A request that fails with an error the service did
/// not render is blamed on the database only if a probe fails too. Paths served from memory are
/// left alone, so the hot path pays nothing. A request refused a place in the pool's bounded wait
/// (`StorageError.busy`: PostgreSQL answering, slowly) is answered 503 with `Retry-After` too.
struct DatabaseAvailabilityMiddleware<Context: RequestContext>: RouterMiddleware {
    let watch: DatabaseStallWatch
    /// Paths that never wait on PostgreSQL (health, metrics, what a service serves from memory).
    let exemptPaths: [PathPrefix]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let path = request.uri.path
        guard !exemptPaths.contains(where: { $0.covers(path) }) else {
            return try await next(request, context)
        }
        do {
            return try await withoutActuallyEscaping(next) { next in
                let next = UnsafeTransfer(next)
                return try await watch.watching { try await next.value(request, context) }
            }
        } catch StorageError.busy {
            context.logger.warning("request refused: every database connection is busy and the wait for one is full")
            throw APIError.databaseBusy
        } catch is DatabaseStallWatch.Abandoned {
            context.logger.warning("request abandoned: postgresql is unreachable")
            throw APIError.databaseUnavailable
        } catch let error where !(error is any HTTPResponseError) && !(error is CancellationError) {
            guard await watch.database.isReachable(timeout: watch.probeTimeout) else {
                context.logger.warning("request failed while postgresql is unreachable", metadata: ["error.type": "\(type(of: error))"])
                throw APIError.databaseUnavailable
            }
            throw error
        }
    }
}

/// Carries the request's non-escaping `next` into the watched child task. Sound because the task
/// group never outlives `withoutActuallyEscaping`, and only that one task calls it.
private struct UnsafeTransfer<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

import Logging
import PostgresNIO
import SesameHTTP
import SesameStorage

/// A per-app admission budget that every auth replica shares: kept in PostgreSQL as one
/// "theoretical arrival time" per app and purpose (GCRA, the token bucket in one timestamp), so
/// two replicas admit what one would, not twice Apple's ramp. One statement per admission; the row
/// lock it takes lasts that statement only.
struct AdmissionBudget: Sendable {
    let database: Database
    /// What the budget admits (`attest`, `unattested`): each has its own per app.
    let purpose: String
    /// Admissions per second per app.
    let rate: Double
    /// How many may be admitted at once after a quiet spell.
    let burst: Double
    let logger: Logger

    /// Spends one of `appID`'s admissions, or throws `429 rate_limited` with a `Retry-After` when
    /// the next comes later, jittered by up to `jitterSeconds` so that refused clients do not
    /// come back in step.
    func enforce(_ appID: String, jitterSeconds: Int) async throws {
        _ = try await enforce(appID, redeeming: nil, jitterSeconds: jitterSeconds)
    }

    /// `enforce(_:jitterSeconds:)` for a caller holding `challenge`, in the same statement: the
    /// challenge is redeemed, and an admission spent only if it was fresh, so nobody can spend an
    /// app's budget with requests that cost them nothing. False, with nothing spent, when the
    /// challenge was unknown, spent or expired.
    func enforce(_ appID: String, redeeming challenge: ChallengeStore.Redemption?, jitterSeconds: Int) async throws -> Bool {
        let interval = 1 / rate
        let tolerance = (burst - 1) * interval
        let statement = AdmissionStatement(
            appID: appID, purpose: purpose, intervalSeconds: interval, toleranceSeconds: tolerance, challenge: challenge)
        for try await (redeemed, admitted, ahead) in try await database.client.execute(statement, logger: logger) {
            guard redeemed else { return false }
            if admitted { return true }
            let wait = max(0, (ahead ?? 0) - tolerance)
            throw APIError.rateLimited(retryAfter: max(1, Int(wait.rounded(.up))) + Int.random(in: 0...jitterSeconds))
        }
        return false
    }
}

/// `AdmissionBudget.enforce`, prepared once per connection: every attest runs it. With a challenge
/// (`$5`, `$6`), it is redeemed first and the budget touched only if it was fresh; without, the
/// redemption matches nothing and counts as done. The final SELECT reads the row as it was before
/// this statement: when refused, how far ahead the budget already is.
private struct AdmissionStatement: PostgresPreparedStatement {
    static let sql = """
        WITH redeemed AS (\(ChallengeStore.redeemingSQL(hash: "$5", purpose: "$6"))
        ), taken AS (
            INSERT INTO admission_budgets AS b (app_id, purpose, theoretical_arrival)
            SELECT $1, $2, clock_timestamp() + make_interval(secs => $3)
            WHERE $5::bytea IS NULL OR EXISTS (SELECT 1 FROM redeemed WHERE fresh)
            ON CONFLICT (app_id, purpose) DO UPDATE
                SET theoretical_arrival = greatest(b.theoretical_arrival, clock_timestamp()) + make_interval(secs => $3)
                WHERE b.theoretical_arrival - clock_timestamp() <= make_interval(secs => $4)
            RETURNING 1
        )
        SELECT $5::bytea IS NULL OR EXISTS (SELECT 1 FROM redeemed WHERE fresh), EXISTS (SELECT 1 FROM taken),
            (SELECT extract(epoch FROM theoretical_arrival - clock_timestamp())::float8 FROM admission_budgets
             WHERE app_id = $1 AND purpose = $2)
        """
    typealias Row = (Bool, Bool, Double?)

    let appID: String
    let purpose: String
    let intervalSeconds: Double
    let toleranceSeconds: Double
    let challenge: ChallengeStore.Redemption?

    func makeBindings() throws -> PostgresBindings {
        var bindings = PostgresBindings(capacity: 6)
        bindings.append(appID)
        bindings.append(purpose)
        bindings.append(intervalSeconds)
        bindings.append(toleranceSeconds)
        try bindings.append(challenge?.hash)
        bindings.append(challenge?.purpose)
        return bindings
    }

    func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
}

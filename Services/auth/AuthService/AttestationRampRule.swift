import Foundation
import SesameDomain

/// When an automatic attestation ramp widens (Apple's guidance: start small, watch the success rate,
/// widen while it holds, pause when the rate limit bites): at most once a `period`, by doubling, when
/// the last day saw at least `minimumAttempts` attempts, `minimumSuccessRate` of them succeeded, and
/// SesameKit reported Apple's rate limit for under `rateLimitedShare` of them. It never narrows: the
/// reports are forgeable, so the most a forger does is hold it where it is.
enum AttestationRampRule {
    static let period: TimeInterval = 86400
    static let minimumAttempts: Int64 = 20
    static let minimumSuccessRate = 0.95
    static let rateLimitedShare = 0.01

    enum Decision: Equatable, Sendable {
        /// Widen to this percentage.
        case widen(to: Double)
        /// Due, but held, for this reason (the dashboard shows it).
        case hold(String)
        /// Not due yet, or at 100 already.
        case wait
    }

    static func decide(percent: Double, widenedAt: Date, now: Date, day: AttestationAttempts) -> Decision {
        guard percent < 100, now.timeIntervalSince(widenedAt) >= period else { return .wait }
        guard day.attempts >= minimumAttempts else {
            return .hold("\(day.attempts) attestation attempts in the last day: it widens after \(minimumAttempts)")
        }
        if Double(day.rateLimited) >= Double(day.attempts) * rateLimitedShare {
            return .hold("Apple's rate limit reported for \(day.rateLimited) of \(day.attempts) attempts in the last day: it widens under 1 %")
        }
        let rate = day.successRate ?? 0
        guard rate >= minimumSuccessRate else {
            return .hold("\(String(format: "%.1f", rate * 100)) % of the last day's \(day.attempts) attempts succeeded: it widens at 95 %")
        }
        return .widen(to: min(100, percent * 2))
    }
}

import HTTPTypes
import SesameDomain
import SesameHTTP

/// Every refusal of the relay's own: distinct from the upstream's answers, which pass through.
enum RelayErrors {
    static let notFound = APIError(
        .notFound, code: DeliveryErrorCode.relayNotFound, message: "This app has no relay of that name (see GET /v1/admin/relays).")
    /// The relay's sealed headers do not open for its upstream as stored now (moved to another
    /// origin without them, or sealed before they were bound): nothing is sent anywhere.
    static let unusable = APIError(
        .serviceUnavailable, code: DeliveryErrorCode.relayUnusable,
        message: "This relay cannot be used until an owner of the app sets its headers again (they are sealed for another upstream).")
    static func methodNotAllowed(_ methods: [String]) -> APIError {
        APIError(
            .methodNotAllowed, code: DeliveryErrorCode.relayMethodNotAllowed,
            message: "This relay's rules allow \(methods.joined(separator: ", ")) only.", headers: [.allow: methods.joined(separator: ", ")])
    }
    static let pathNotAllowed = APIError(
        .forbidden, code: DeliveryErrorCode.relayPathNotAllowed,
        message: "No path pattern of this relay allows this path (empty, . and .. segments and % never match).")
    static let queryTooLong = APIError.invalidRequest("The query may be at most \(RelayRoutes.maxQueryBytes) bytes.")
    /// A call without the proof its relay asks for.
    static func proofRequired(_ proof: RelayProof) -> APIError {
        APIError(
            .forbidden, code: DeliveryErrorCode.relayProofRequired,
            message: proof == .limitedUseToken
                ? "This relay needs a single-use API token for it, bound to the call, with each call, in X-Sesame-Limited-Use-Token (SesameKit: relay(_:proof: .limitedUseToken))."
                : "This relay needs an App Attest assertion over the call with each call, in X-Sesame-Assertion (SesameKit: relay(_:proof: .assertion)).")
    }

    /// The proof the relay asks for was sent but does not hold: "The `what` sent with this call `why`."
    static func proofInvalid(_ what: String, _ why: String) -> APIError {
        APIError(.forbidden, code: DeliveryErrorCode.relayProofInvalid, message: "The \(what) sent with this call \(why).")
    }
    static func quotaExceeded(_ kind: RelayQuotas.Kind, limit: Int, retryAfter: Int) -> APIError {
        let what = switch kind {
        case .installMinute: "\(limit) calls a minute for each install"
        case .installDay: "\(limit) calls a day for each install"
        case .appDay: "\(limit) calls a day for the whole app"
        }
        return APIError(
            .tooManyRequests, code: DeliveryErrorCode.relayQuotaExceeded, message: "This relay's quota of \(what) is used up; try again later.",
            headers: [.retryAfter: String(retryAfter)])
    }
    static let busy = APIError(
        .tooManyRequests, code: DeliveryErrorCode.relayBusy,
        message: "Too many relay calls are open at once (for this install, this address, this app or on this server); try again shortly.", headers: [.retryAfter: "1"])
    /// The caller's body did not arrive within the relay's time (its slot is given back).
    static func requestTimeout(_ seconds: Int) -> APIError {
        APIError(.requestTimeout, code: DeliveryErrorCode.relayRequestTimeout, message: "The request's body did not arrive within this relay's \(seconds) s.")
    }
    static func requestTooLarge(_ limit: Int) -> APIError {
        APIError(.contentTooLarge, code: DeliveryErrorCode.relayRequestTooLarge, message: "This relay takes bodies of at most \(limit) bytes.")
    }
    static func responseTooLarge(_ limit: Int) -> APIError {
        APIError(.badGateway, code: DeliveryErrorCode.relayResponseTooLarge, message: "The upstream's answer is larger than this relay's \(limit) bytes.")
    }
    /// The upstream could not be reached or answered in a way the relay cannot pass on. The cause is
    /// logged, not told: it may name addresses inside the deployment.
    static let upstreamFailed = APIError(
        .badGateway, code: DeliveryErrorCode.relayUpstreamFailed, message: "The relay could not reach its upstream; try again later.")
    static func upstreamTimeout(_ seconds: Int) -> APIError {
        APIError(
            .gatewayTimeout, code: DeliveryErrorCode.relayUpstreamTimeout, message: "The upstream did not answer within this relay's \(seconds) s.")
    }
}

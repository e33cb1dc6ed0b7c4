import Foundation
import Hummingbird
import SesameDomain
import SesameStorage

/// `GET /v1/admin/audit`.
struct AuditResponse: ResponseEncodable {
    let entries: [AuditEntry]
    /// Pass as `after` for the next page; absent on the last page.
    let next: Int64?
}

/// `GET /v1/admin/audit/verify`: whether the app's audit chain is intact, and its head to export.
struct AuditVerifyResponse: ResponseEncodable {
    /// Every chained entry follows the one before and says what it said when written (and the
    /// chain reaches the `head` asked about, if one was).
    let intact: Bool
    let entries: Int
    /// Entries written before the chain began (before this Sesame version), which it cannot vouch for.
    let predating: Int
    /// The newest intact entry: keep its hash outside Sesame and pass it back as `head` later.
    let head: AuditHead?
    /// The first entry that breaks the chain.
    let broken: AuditBreak?
    /// With `head`: whether an intact entry still carries it (false: the log was cut or rewritten since).
    let reachesHead: Bool?
    let message: String
}

struct AuditHead: Encodable, Sendable {
    let id: Int64
    let hash: String
}

struct AuditBreak: Encodable, Sendable {
    let id: Int64
    let reason: String
}

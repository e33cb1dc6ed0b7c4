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

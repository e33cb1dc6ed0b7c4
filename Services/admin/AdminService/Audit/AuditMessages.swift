import Hummingbird

// The audit routes' messages are the document's (generated into `Operations`; the document's
// `AuditEntry` is the store's own, see openapi-generator-config.yaml).

/// `GET /v1/admin/audit`: a page of entries; `next` (absent on the last page) is the `after` of the next.
typealias AuditResponse = Operations.listAudit.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/audit/verify`: whether the app's audit chain is intact, and its head to export.
typealias AuditVerifyResponse = Operations.verifyAudit.Output.Ok.Body.jsonPayload
typealias AuditHead = AuditVerifyResponse.headPayload
typealias AuditBreak = AuditVerifyResponse.brokenPayload

extension AuditResponse: ResponseEncodable {}
extension AuditVerifyResponse: ResponseEncodable {}

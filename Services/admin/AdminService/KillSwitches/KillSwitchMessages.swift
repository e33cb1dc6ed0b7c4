import Hummingbird

// The kill switch's and the emergency revocation's messages are the document's (generated into
// `Components` and `Operations`; see openapi-generator-config.yaml). A proposal under the two-person
// rule stores the request as encoded here, the same keys the wire has.

/// `POST /v1/admin/kill-switch`: `enabled: false` switches the versions off.
typealias KillSwitchRequest = Operations.setKillSwitch.Input.Body.jsonPayload
typealias KillSwitchResponse = Operations.setKillSwitch.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/kill-switch`.
typealias KilledVersionsResponse = Operations.listKillSwitches.Output.Ok.Body.jsonPayload
/// `POST /v1/admin/emergency-revoke`.
typealias EmergencyRevokeRequest = Operations.emergencyRevoke.Input.Body.jsonPayload
typealias EmergencyRevokeResponse = Operations.emergencyRevoke.Output.Ok.Body.jsonPayload
/// `GET /v1/admin/emergency-revoke`.
typealias RevocationsResponse = Operations.listRevocations.Output.Ok.Body.jsonPayload

extension KillSwitchResponse: ChangeAnswer {}
extension KilledVersionsResponse: ResponseEncodable {}
extension EmergencyRevokeResponse: ChangeAnswer {}
extension RevocationsResponse: ResponseEncodable {}

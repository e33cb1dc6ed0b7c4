import Foundation
import SesameStorage
import Testing

@testable import AdminService

/// The webhook events are one typed list (`WebhookTopic`), each audit action decided once: the
/// management API's document offers exactly these events.
@Suite("Webhook events")
struct WebhookTopicTests {
    @Test("the document's webhook events are exactly WebhookTopic's, both ways")
    func documentListsEveryTopic() throws {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(AdminService.openAPIDocument.utf8)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: Any])
        let post = try #require((paths["/v1/admin/webhooks"] as? [String: Any])?["post"] as? [String: Any])
        let body = (((post["requestBody"] as? [String: Any])?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["schema"]
        let events = ((((body as? [String: Any])?["properties"] as? [String: Any])?["events"] as? [String: Any])?["items"] as? [String: Any])?["enum"]
        let documented = try #require(events as? [String], "no enum for a webhook's events in Services/admin/openapi.yaml")
        #expect(documented.sorted() == WebhookTopic.allCases.map(\.rawValue).sorted())
    }

    @Test("each event covers the actions it always did; pin changes are events (issue 72); reads, debug tokens and blobs are not")
    func actionsMapToTheirEvents() {
        let expected: [AuditAction: WebhookTopic?] = [
            .configUpload: .configPublished, .configRolloutRollback: .configRolledBack, .configRolloutStart: .configRollout,
            .killSwitchClear: .killSwitch, .deviceRevoke: .revocation, .backendKeyCreate: .keyCreated, .accountSessionsEnd: .accountChanged,
            .changeBreakGlass: .approvalDecided, .configRead: nil, .debugTokenUse: nil, .blobUpload: nil, .pinAdd: .pinsChanged, .pinRotateSigningKey: .pinsChanged,
        ]
        for (action, topic) in expected {
            #expect(WebhookTopic(action: action) == topic, "\(action.rawValue)")
            #expect(WebhookEvent.named(forAction: action.rawValue) == topic?.rawValue)
        }
        #expect(WebhookEvent.named(forAction: "an.action.this.version.never.made") == nil)
    }

    @Test("every event is some action's: none can be subscribed to and never sent")
    func everyTopicHasAnAction() {
        let reached = Set(AuditAction.allCases.compactMap(WebhookTopic.init(action:)))
        #expect(reached == Set(WebhookTopic.allCases))
    }
}

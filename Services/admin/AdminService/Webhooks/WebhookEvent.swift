import Crypto
import Foundation
import SesameDomain
import SesameJSON
import SesameStorage

/// What a webhook is told: an event named from the audit entry that records a change, the entry
/// itself, and its place in the audit chain (so a receiver holds Sesame to the chain's head).
enum WebhookEvent {
    /// The event an audit entry's action is, if any (reads and debug-token uses are not events).
    static func named(forAction action: String) -> String? {
        AuditAction(rawValue: action).flatMap(WebhookTopic.init(action:))?.rawValue
    }

    /// The JSON a webhook receives for `entry` as `event`: Sesame's own shape, or Slack's
    /// incoming-webhook shape (`{"text": …}`).
    static func payload(event: String, entry: AuditEntry, entryHash: [UInt8]?, appID: String, delivery: String, slack: Bool) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        if slack {
            var text = "Sesame · \(appID): \(event) (\(entry.action))"
            if let pattern = entry.pattern { text += " on `\(pattern)`" }
            if let revision = entry.revision { text += ", revision \(revision)" }
            text += " by \(entry.actor)"
            return try encoder.encode(["text": text])
        }
        return try encoder.encode(
            Payload(
                id: delivery, event: event, app: appID, at: entry.at, actor: entry.actor, action: entry.action, pattern: entry.pattern,
                revision: entry.revision, details: entry.details, audit: .init(id: entry.id, hash: entryHash.map(Hex.encode))))
    }

    struct Payload: Encodable {
        struct Audit: Encodable {
            let id: Int64
            /// The entry's hash in the app's audit chain: the chain's head when it was sent.
            let hash: String?
        }
        let id: String
        let event: String
        let app: String
        let at: Date
        let actor: String
        let action: String
        let pattern: String?
        let revision: Int64?
        let details: [String: JSONValue]
        let audit: Audit
    }

    /// `Sesame-Signature`: `t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>`. A receiver
    /// recomputes it with the secret and refuses a `t` more than five minutes away (a replay).
    static func signature(body: Data, secret: [UInt8], at time: Date) -> String {
        let seconds = Int64(time.timeIntervalSince1970)
        var message = Data("\(seconds).".utf8)
        message.append(body)
        let mac = HMAC<SHA256>.authenticationCode(for: message, using: SymmetricKey(data: secret))
        return "t=\(seconds),v1=\(Hex.encode(mac))"
    }
}

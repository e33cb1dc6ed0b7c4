import Crypto
import Foundation
import SesameDomain

/// A published config, ready to serve: decrypted once per revision.
struct ServedConfig: Sendable {
    let pattern: String
    let revision: Int64
    /// The config as stored: a JSON object (or a zero-knowledge envelope).
    let body: [UInt8]
    /// Parsed, for `scope`; nil for zero-knowledge configs, which cannot be filtered.
    let parsed: JSONValue?
    let zeroKnowledge: Bool
    /// The ETag of the whole config at this revision.
    let etag: String

    init(pattern: String, revision: Int64, body: [UInt8], zeroKnowledge: Bool) {
        self.pattern = pattern
        self.revision = revision
        self.body = body
        self.zeroKnowledge = zeroKnowledge
        self.parsed = zeroKnowledge ? nil : try? JSONDecoder().decode(JSONValue.self, from: Data(body))
        self.etag = ServedConfig.etag(revision: revision, bytes: body)
    }

    /// A strong ETag over what is served.
    static func etag(revision: Int64, bytes: some Sequence<UInt8>) -> String {
        let digest = Hex.encode(SHA256.hash(data: Array(bytes)).prefix(12))
        return "\"\(revision)-\(digest)\""
    }
}

/// Everything delivery knows about one app, replaced whole when it changes.
struct AppState: Sendable {
    /// Its published configs, kill switches and emergency revocations: what `resolve` decides on.
    var release = AppRelease<ServedConfig>()
    /// The app's policy (how per-user data knows its user, the document quota).
    var policy = AppPolicy()
}

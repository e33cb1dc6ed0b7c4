import Crypto
import Foundation
import SesameDomain
import SesameJSON
import Synchronization

/// A published config, ready to serve: decrypted once per revision, with what each trust tier
/// may see of it prepared once too.
struct ServedConfig: Sendable {
    let pattern: String
    let revision: Int64
    let zeroKnowledge: Bool
    /// Which tier each top-level key needs.
    let tiers: ConfigTiers
    /// What an attested caller gets: the config as stored, a JSON object (or a zero-knowledge envelope).
    let whole: View
    /// What the tiers below attested get, prepared at the first such request: most configs never
    /// see one, and parsing every config at load was most of a large first load.
    private let lowerTierViews = LowerTierViews()

    /// The config as one tier sees it.
    struct View: Sendable {
        let body: [UInt8]
        /// A strong ETag over `body`.
        let etag: String
        /// The top-level keys left out for this tier.
        let withheld: [String]
        /// `withheld` as the JSON array the answer carries; nil when nothing is withheld.
        let withheldJSON: [UInt8]?
        /// The `scope` answers cut from `body`, made when first asked.
        let scoped = ScopedCuts()

        init(body: [UInt8], etag: String, withheld: [String]) {
            self.body = body
            self.etag = etag
            self.withheld = withheld
            // Top-level keys of the developer's config may hold any character: encoded once, here.
            withheldJSON = withheld.isEmpty ? nil : (try? JSONEncoder().encode(withheld)).map(Array.init)
        }
    }

    init(pattern: String, revision: Int64, body: [UInt8], zeroKnowledge: Bool, tiers: ConfigTiers = ConfigTiers()) {
        self.pattern = pattern
        self.revision = revision
        self.zeroKnowledge = zeroKnowledge
        self.tiers = tiers
        whole = View(body: body, etag: ServedConfig.etag(revision: revision, bytes: body), withheld: [])
    }

    /// What a caller of `tier` sees; nil when it may see nothing (a zero-knowledge config, which
    /// only attested installs get).
    func view(for tier: TrustTier) -> View? {
        if tier == .attested { return whole }
        return lowerTierViews.views { prepareLowerTierViews() }[tier]
    }

    /// Each lower tier's view: the config less the keys it may not see. None for a zero-knowledge
    /// config, which Sesame cannot read. The parsed tree is dropped after: only a view that a `scope`
    /// request asks for keeps one (`ScopedCuts`), so most held configs stay at their bytes.
    private func prepareLowerTierViews() -> [TrustTier: View] {
        guard !zeroKnowledge, case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(whole.body)) else { return [:] }
        var views: [TrustTier: View] = [:]
        for tier in TrustTier.allCases where tier != .attested {
            let (visible, withheld) = tiers.visible(object, to: tier)
            let bytes = (try? Self.encode(.object(visible))) ?? Array("{}".utf8)
            views[tier] = View(body: bytes, etag: ServedConfig.etag(revision: revision, bytes: bytes), withheld: withheld)
        }
        return views
    }

    /// JSON as delivery serves what it builds: sorted keys, slashes as they are.
    static func encode(_ value: JSONValue) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    /// A strong ETag over what is served.
    static func etag(revision: Int64, bytes: some Sequence<UInt8>) -> String {
        let digest = Hex.encode(SHA256.hash(data: Array(bytes)).prefix(12))
        return "\"\(revision)-\(digest)\""
    }
}

/// A config's lower-tier views, made once when first asked for. Two callers at once may both
/// make them; either result is the same.
final class LowerTierViews: Sendable {
    private let prepared = Mutex<[TrustTier: ServedConfig.View]?>(nil)

    func views(preparing prepare: () -> [TrustTier: ServedConfig.View]) -> [TrustTier: ServedConfig.View] {
        if let views = prepared.withLock({ $0 }) { return views }
        let views = prepare()
        prepared.withLock { $0 = views }
        return views
    }
}

/// Everything delivery knows about one app, replaced whole when it changes.
struct AppState: Sendable {
    /// Its published configs, kill switches and emergency revocations: what `resolve` decides on.
    var release = AppRelease<ServedConfig>()
    /// The app's policy (how per-user data knows its user, the document quota).
    var policy = AppPolicy()
    /// The token subjects (base64url key ids) of devices, and of debug tokens (`debug:<id>`),
    /// revoked recently enough that a token they hold may still be unexpired: refused at once
    /// rather than at their next refresh or exchange.
    var revokedDevices: Set<String> = []
    /// The signed pin registry; nil while the app has no pins or no signing key.
    var pinRegistry: ServedPinRegistry?
    /// The app's attested relays by name, their injected headers opened.
    var relays: [String: ServedRelay] = [:]
    /// Relays whose injected headers do not open for their upstream (or whose rules are not
    /// servable), by name with why: answered `503 relay_unusable`, the app's configs served as ever.
    var unusableRelays: [String: String] = [:]
}

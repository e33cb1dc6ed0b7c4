import Foundation
import SesameDomain
import Testing

@Suite("AppRelease.resolve: what an app at a version gets")
struct AppReleaseTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func version(_ text: String) -> AppVersion { AppVersion(text)! }
    func pattern(_ text: String) -> VersionPattern { try! VersionPattern(text) }
    func freshToken(_ version: String? = "2.1.3") -> AppRelease<String>.Token { .init(version: version, issuedAt: now) }

    /// The pattern served, or what was decided instead, as one comparable string.
    func outcome(_ release: AppRelease<String>, _ version: String, token: AppRelease<String>.Token? = nil, at time: Date? = nil) -> String {
        switch release.resolve(version: self.version(version), token: token ?? freshToken(version), now: time ?? now) {
        case .disabled(let reason): "disabled: \(reason)"
        case .revoked: "revoked"
        case .serve(let config, let pattern, let refreshAfter, _): "\(config) via \(pattern)" + (refreshAfter.map { " refresh \($0)" } ?? "")
        case .noConfig: "none"
        }
    }

    @Test("the most specific published pattern wins: exact, then N.N.*, then N.*, then *")
    func lookupOrder() {
        var release = AppRelease<String>(configs: ["*": "any", "2.*": "two", "2.1.*": "two-one", "2.1.3": "exact"])
        #expect(outcome(release, "2.1.3") == "exact via 2.1.3")
        #expect(outcome(release, "2.1.4") == "two-one via 2.1.*")
        #expect(outcome(release, "2.2") == "two via 2.*")
        #expect(outcome(release, "3") == "any via *")
        release.configs["*"] = nil
        #expect(outcome(release, "3.0.0") == "none")
        #expect(outcome(release, "2") == "two via 2.*")
    }

    @Test("nothing published: no config, whatever the version")
    func nothingPublished() {
        #expect(outcome(AppRelease<String>(), "1.0.0") == "none")
    }

    @Test("a kill switch on the version disables it before any config is looked at; others are served")
    func killSwitch() {
        let release = AppRelease<String>(
            configs: ["*": "any"], rules: AccessRules(killSwitches: [KillSwitch(pattern: pattern("2.1.*"), reason: "update now")]))
        #expect(outcome(release, "2.1.0") == "disabled: update now")
        #expect(outcome(release, "2.2.0") == "any via *")
        // A switched-off version is disabled even where nothing is published for it.
        #expect(outcome(AppRelease<String>(rules: release.rules), "2.1.9") == "disabled: update now")
        // The version asked for decides, not the older one the token was issued for.
        #expect(outcome(release, "2.2.0", token: .init(version: "2.1.0", issuedAt: now)) == "any via *")
    }

    @Test("a revocation refuses a token issued before it, for the token's version or the one asked for")
    func revoked() {
        let release = AppRelease<String>(
            configs: ["*": "any"], rules: AccessRules(revocations: [RevocationRule(pattern: pattern("2.*"), issuedBefore: now)]))
        let before = now.addingTimeInterval(-1)
        #expect(outcome(release, "2.0", token: .init(version: "2.0", issuedAt: before)) == "revoked")
        #expect(outcome(release, "3.0", token: .init(version: "2.0", issuedAt: before)) == "revoked")
        #expect(outcome(release, "2.0", token: .init(version: "3.0", issuedAt: before)) == "revoked")
        // A token version that does not parse is covered by every revocation.
        #expect(outcome(release, "3.0", token: .init(version: "not a version", issuedAt: before)) == "revoked")
        #expect(outcome(release, "3.0", token: .init(version: nil, issuedAt: before)) == "revoked")
        // Issued at or after the cut-off, or for versions the pattern does not cover: served.
        #expect(outcome(release, "2.0", token: .init(version: "2.0", issuedAt: now)) == "any via *")
        #expect(outcome(release, "3.0", token: .init(version: "3.0", issuedAt: before)) == "any via *")
    }

    @Test("inside a revocation's forced-refresh window the config comes with the seconds left, rounded up")
    func refreshWindow() {
        let release = AppRelease<String>(
            configs: ["2.*": "two"],
            rules: AccessRules(revocations: [
                RevocationRule(pattern: pattern("2.*"), issuedBefore: now.addingTimeInterval(-10), refreshDeadline: now.addingTimeInterval(29.5))
            ]))
        #expect(outcome(release, "2.4") == "two via 2.* refresh 30")
        #expect(outcome(release, "2.4", at: now.addingTimeInterval(30)) == "two via 2.*")
        // The hint rides only on a config: an uncovered version with nothing published gets none.
        #expect(outcome(release, "4.0") == "none")
    }

    @Test("a kill switch wins over a revocation that would also refuse")
    func killSwitchFirst() {
        let release = AppRelease<String>(
            configs: ["*": "any"],
            rules: AccessRules(
                killSwitches: [KillSwitch(pattern: pattern("*"), reason: "maintenance")],
                revocations: [RevocationRule(pattern: pattern("*"), issuedBefore: now)]))
        #expect(outcome(release, "1.0", token: .init(version: "1.0", issuedAt: .distantPast)) == "disabled: maintenance")
    }
}

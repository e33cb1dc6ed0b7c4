import Foundation
import SesameDomain
import Testing

@Suite("Access rules: kill switches and emergency revocations, decided in one place")
struct AccessRulesTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    func version(_ text: String) -> AppVersion { AppVersion(text)! }
    func pattern(_ text: String) -> VersionPattern { try! VersionPattern(text) }

    @Test("no rules: allowed without a refresh hint")
    func nothing() {
        #expect(AccessRules().isEmpty)
        #expect(!AccessRules(killSwitches: [KillSwitch(pattern: pattern("*"), reason: "x")]).isEmpty)
        #expect(!AccessRules(revocations: [RevocationRule(pattern: pattern("*"), issuedBefore: now)]).isEmpty)
        #expect(AccessRules().verdict(requestedVersion: version("1.0"), tokenVersion: nil, issuedAt: now, now: now) == .allowed(refreshAfter: nil))
    }

    @Test("a kill switch stops the requested version, else the token's; * stops everyone")
    func killSwitches() {
        let rules = AccessRules(killSwitches: [KillSwitch(pattern: pattern("2.1.*"), reason: "update")])
        #expect(rules.verdict(requestedVersion: version("2.1.3"), tokenVersion: nil, issuedAt: now, now: now) == .disabled(reason: "update"))
        #expect(rules.verdict(requestedVersion: nil, tokenVersion: version("2.1.9"), issuedAt: now, now: now) == .disabled(reason: "update"))
        // An app updated past the switch asks for its new version with its older token.
        #expect(rules.verdict(requestedVersion: version("2.2.0"), tokenVersion: version("2.1.3"), issuedAt: now, now: now) == .allowed(refreshAfter: nil))
        #expect(rules.verdict(requestedVersion: nil, tokenVersion: nil, issuedAt: now, now: now) == .allowed(refreshAfter: nil))
        let everything = AccessRules(killSwitches: [KillSwitch(pattern: pattern("*"), reason: "down")])
        #expect(everything.verdict(requestedVersion: nil, tokenVersion: nil, issuedAt: now, now: now) == .disabled(reason: "down"))
    }

    @Test("a revocation covers the token's version or the claimed one; a token without a version always")
    func revocationCoverage() {
        let revocation = RevocationRule(pattern: pattern("2.*"), issuedBefore: now)
        #expect(revocation.covers(tokenVersion: version("2.1.3"), claimedVersion: version("3.0.0")))
        #expect(revocation.covers(tokenVersion: version("3.0.0"), claimedVersion: version("2.0")))
        #expect(revocation.covers(tokenVersion: nil, claimedVersion: version("3.0.0")))
        #expect(revocation.covers(tokenVersion: nil, claimedVersion: nil))
        #expect(!revocation.covers(tokenVersion: version("3.0.0"), claimedVersion: nil))
        #expect(!revocation.covers(tokenVersion: version("3.0.0"), claimedVersion: version("4.1")))
    }

    @Test("older tokens are revoked; newer ones are allowed with the shortest refresh hint still running")
    func revocations() {
        let rules = AccessRules(revocations: [
            RevocationRule(pattern: pattern("2.*"), issuedBefore: now, refreshDeadline: now.addingTimeInterval(600)),
            RevocationRule(pattern: pattern("*"), issuedBefore: now.addingTimeInterval(-60), refreshDeadline: now.addingTimeInterval(90.2)),
            RevocationRule(pattern: pattern("2.1.3"), issuedBefore: now.addingTimeInterval(-60), refreshDeadline: now.addingTimeInterval(-1)),
        ])
        #expect(rules.verdict(requestedVersion: version("2.1.3"), tokenVersion: version("2.1.3"), issuedAt: now.addingTimeInterval(-1), now: now) == .revoked)
        #expect(rules.verdict(requestedVersion: version("3.0"), tokenVersion: version("2.1.3"), issuedAt: now.addingTimeInterval(-1), now: now) == .revoked)
        #expect(rules.verdict(requestedVersion: nil, tokenVersion: nil, issuedAt: now.addingTimeInterval(-1), now: now) == .revoked)
        #expect(rules.verdict(requestedVersion: version("2.1.3"), tokenVersion: version("2.1.3"), issuedAt: now, now: now) == .allowed(refreshAfter: 91))
        #expect(rules.verdict(requestedVersion: version("3.0"), tokenVersion: version("3.0"), issuedAt: now.addingTimeInterval(-1), now: now) == .allowed(refreshAfter: 91))
        #expect(rules.verdict(requestedVersion: version("2.0"), tokenVersion: version("2.0"), issuedAt: now, now: now.addingTimeInterval(100)) == .allowed(refreshAfter: 500))
    }

    @Test("from the token's text: no rules, nothing to parse; with a revocation, a version that does not parse is covered")
    func tokenVersionText() {
        #expect(AccessRules().verdict(requestedVersion: nil, tokenVersionText: "not a version", issuedAt: .distantPast, now: now) == .allowed(refreshAfter: nil))
        let rules = AccessRules(revocations: [RevocationRule(pattern: pattern("2.*"), issuedBefore: now)])
        #expect(rules.verdict(requestedVersion: nil, tokenVersionText: "not a version", issuedAt: .distantPast, now: now) == .revoked)
        #expect(rules.verdict(requestedVersion: nil, tokenVersionText: "3.0", issuedAt: .distantPast, now: now) == .allowed(refreshAfter: nil))
        #expect(rules.verdict(requestedVersion: nil, tokenVersionText: "2.4", issuedAt: .distantPast, now: now) == .revoked)
    }

    @Test("a kill switch wins over a revocation")
    func order() {
        let rules = AccessRules(
            killSwitches: [KillSwitch(pattern: pattern("2.*"), reason: "stop")], revocations: [RevocationRule(pattern: pattern("*"), issuedBefore: now)])
        #expect(rules.verdict(requestedVersion: version("2.0"), tokenVersion: nil, issuedAt: .distantPast, now: now) == .disabled(reason: "stop"))
    }
}

import Foundation
import SesameDomain
import Testing

@Suite("Staged rollouts: sticky, independent, uniform buckets, decided in resolve")
struct RolloutTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let appID = "ABCDE12345.com.example.app"

    /// 100,000 simulated installs: random 32-byte key ids, base64url as token subjects carry them.
    static let installs: [String] = {
        var generator = SystemRandomNumberGenerator()
        return (0..<100_000).map { _ in Base64.urlEncode((0..<32).map { _ in UInt8.random(in: 0...255, using: &generator) }) }
    }()

    func rollout(_ percent: Double, salt: String = "salt-a", paused: Bool = false, previous: String? = "old") -> Rollout<String> {
        Rollout(id: UUID(), appID: appID, basisPoints: RolloutBucket.basisPoints(percent: percent)!, salt: salt, paused: paused, previous: previous)
    }

    func share(_ rollout: Rollout<String>) -> Double {
        Double(Self.installs.count { rollout.includes(install: $0) }) / Double(Self.installs.count) * 100
    }

    @Test("the measured split over 100,000 keys is the share asked for (within 0.6 points), and printed")
    func uniformSplit() {
        for percent in [1.0, 5, 25, 50, 90] {
            let measured = share(rollout(percent))
            print(String(format: "rollout at %5.1f %%: %6.3f %% of 100,000 installs got the new revision", percent, measured))
            // 0.6 points is 3.8 standard errors at 50 %, more elsewhere.
            #expect(abs(measured - percent) < 0.6, "asked \(percent) %, measured \(measured) %")
        }
        #expect(share(rollout(0)) == 0)
        #expect(share(rollout(100)) == 100)
    }

    @Test("buckets are uniform: every hundredth of the range holds about 1 % of installs (chi-square)")
    func uniformBuckets() {
        var counts = [Int](repeating: 0, count: 100)
        for install in Self.installs { counts[RolloutBucket.of(appID: appID, salt: "s", install: install) / 100] += 1 }
        let expected = Double(Self.installs.count) / 100
        let chiSquare = counts.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        // 99 degrees of freedom: above 160 would happen by chance about once in 10,000 runs.
        #expect(chiSquare < 160, "chi-square \(chiSquare)")
    }

    @Test("sticky: an install keeps its bucket, and widening only adds installs")
    func sticky() {
        let install = Self.installs[0]
        #expect(RolloutBucket.of(appID: appID, salt: "s", install: install) == RolloutBucket.of(appID: appID, salt: "s", install: install))
        let narrow = rollout(5), wide = rollout(20)
        let atFive = Set(Self.installs.filter { narrow.includes(install: $0) })
        let atTwenty = Set(Self.installs.filter { wide.includes(install: $0) })
        #expect(atFive.isSubset(of: atTwenty))
        #expect(atTwenty.count > atFive.count * 3)
    }

    @Test("independent: two rollouts' salts pick unrelated installs; another app buckets differently")
    func independent() {
        let first = Set(Self.installs.filter { rollout(50, salt: "one").includes(install: $0) })
        let second = Set(Self.installs.filter { rollout(50, salt: "two").includes(install: $0) })
        let overlap = Double(first.intersection(second).count) / Double(Self.installs.count) * 100
        #expect(abs(overlap - 25) < 1, "overlap \(overlap) %")
        let sameSalt = Self.installs.prefix(1_000).count {
            RolloutBucket.of(appID: appID, salt: "one", install: $0) == RolloutBucket.of(appID: "OTHER.app", salt: "one", install: $0)
        }
        #expect(sameSalt < 10)
        // Parts are length-prefixed: moving a character from one part to the next changes the bucket.
        let moved = Self.installs.prefix(1_000).count {
            RolloutBucket.of(appID: "ab", salt: "c" + $0, install: "") == RolloutBucket.of(appID: "a", salt: "bc" + $0, install: "")
        }
        #expect(moved < 10)
    }

    func outcome(_ release: AppRelease<String>, _ version: String, install: String?) -> String {
        switch release.resolve(version: AppVersion(version)!, token: .init(version: version, issuedAt: now, install: install), now: now) {
        case .disabled(let reason): "disabled: \(reason)"
        case .revoked: "revoked"
        case .serve(let config, let pattern, _, let decision):
            switch decision {
            case .published: "\(config) via \(pattern)"
            case .rollout(_, let included, _): "\(config) via \(pattern)" + (included ? " (in)" : " (out)")
            case .deviceOverride: "\(config) via \(pattern) (override)"
            }
        case .noConfig: "none"
        }
    }

    @Test("resolve: installs in the rollout get the new revision, the rest the previous one, paused all the previous")
    func resolveSplits() throws {
        let inside = try #require(Self.installs.first { rollout(10).includes(install: $0) })
        let outside = try #require(Self.installs.first { !rollout(10).includes(install: $0) })
        var release = AppRelease<String>(configs: ["2.*": "new", "*": "any"], rollouts: ["2.*": rollout(10)])
        #expect(outcome(release, "2.1", install: inside) == "new via 2.* (in)")
        #expect(outcome(release, "2.1", install: outside) == "old via 2.* (out)")
        // A token without a subject is in no rollout; another pattern is untouched.
        #expect(outcome(release, "2.1", install: nil) == "old via 2.* (out)")
        #expect(outcome(release, "3.0", install: inside) == "any via *")
        release.rollouts["2.*"] = rollout(10, paused: true)
        #expect(outcome(release, "2.1", install: inside) == "old via 2.* (out)")
    }

    @Test("resolve: where the pattern served nothing before, installs outside fall through to a less specific one")
    func resolveFallsThrough() throws {
        let inside = try #require(Self.installs.first { rollout(10).includes(install: $0) })
        let outside = try #require(Self.installs.first { !rollout(10).includes(install: $0) })
        var release = AppRelease<String>(configs: ["2.*": "new", "*": "any"], rollouts: ["2.*": rollout(10, previous: nil)])
        #expect(outcome(release, "2.1", install: inside) == "new via 2.* (in)")
        #expect(outcome(release, "2.1", install: outside) == "any via *")
        release.configs["*"] = nil
        #expect(outcome(release, "2.1", install: outside) == "none")
    }

    @Test("kill switches and revocations stay above a rollout")
    func rulesFirst() throws {
        let inside = try #require(Self.installs.first { rollout(50).includes(install: $0) })
        let killed = AppRelease<String>(
            configs: ["2.*": "new"], rules: AccessRules(killSwitches: [KillSwitch(pattern: try VersionPattern("2.*"), reason: "stop")]),
            rollouts: ["2.*": rollout(50)])
        #expect(outcome(killed, "2.1", install: inside) == "disabled: stop")
        let revoked = AppRelease<String>(
            configs: ["2.*": "new"], rules: AccessRules(revocations: [RevocationRule(pattern: try VersionPattern("2.*"), issuedBefore: now.addingTimeInterval(1))]),
            rollouts: ["2.*": rollout(50)])
        #expect(outcome(revoked, "2.1", install: inside) == "revoked")
    }

    @Test("a device override wins over the rollout and the published revision of its pattern, for that install only")
    func deviceOverride() throws {
        let tester = Self.installs[0]
        let someone = Self.installs[1]
        var release = AppRelease<String>(
            configs: ["2.*": "new", "*": "any"], rollouts: ["2.*": rollout(0)], overrides: ["2.*": [tester: "pinned"], "1.*": [tester: "one"]])
        #expect(outcome(release, "2.1", install: tester) == "pinned via 2.* (override)")
        #expect(outcome(release, "2.1", install: someone) == "old via 2.* (out)")
        // An override is found where nothing is published, and a more specific pattern still matches first.
        #expect(outcome(release, "1.0", install: tester) == "one via 1.* (override)")
        #expect(outcome(release, "1.0", install: someone) == "any via *")
        release.configs["2.1.*"] = "exact"
        #expect(outcome(release, "2.1", install: tester) == "exact via 2.1.*")
        // Kill switches stay above it.
        release.rules = AccessRules(killSwitches: [KillSwitch(pattern: try VersionPattern("1.*"), reason: "stop")])
        #expect(outcome(release, "1.0", install: tester) == "disabled: stop")
    }

    @Test("development builds get the @development patterns first, all of them before any production one")
    func developmentPatterns() {
        var release = AppRelease<String>(configs: ["2.1.*": "prod-two-one", "*@development": "sandbox", "*": "prod"])
        func get(_ version: String, development: Bool) -> String {
            switch release.resolve(version: AppVersion(version)!, token: .init(version: version, issuedAt: now, development: development), now: now) {
            case .serve(let config, let pattern, _, _): "\(config) via \(pattern)"
            default: "none"
            }
        }
        #expect(get("2.1.3", development: false) == "prod-two-one via 2.1.*")
        // A development build never gets a production config while a development one covers it.
        #expect(get("2.1.3", development: true) == "sandbox via *@development")
        release.configs["2.1.*@development"] = "sandbox-two-one"
        #expect(get("2.1.3", development: true) == "sandbox-two-one via 2.1.*@development")
        #expect(get("3.0", development: true) == "sandbox via *@development")
        release.configs["*@development"] = nil
        #expect(get("3.0", development: true) == "prod via *")
        #expect(get("3.0", development: false) == "prod via *")
    }

    @Test("percentages: 0 to 100 in hundredths, written back for people")
    func percentages() {
        #expect(RolloutBucket.basisPoints(percent: 5) == 500)
        #expect(RolloutBucket.basisPoints(percent: 0.5) == 50)
        #expect(RolloutBucket.basisPoints(percent: 12.25) == 1225)
        #expect(RolloutBucket.basisPoints(percent: 100) == 10_000)
        for refused in [-1, 100.01, 0.001, .nan, .infinity] { #expect(RolloutBucket.basisPoints(percent: refused) == nil) }
        #expect(RolloutBucket.percentText(basisPoints: 500) == "5")
        #expect(RolloutBucket.percentText(basisPoints: 50) == "0.5")
        #expect(RolloutBucket.percentText(basisPoints: 1205) == "12.05")
        #expect(RolloutBucket.percentText(basisPoints: 1225) == "12.25")
    }
}

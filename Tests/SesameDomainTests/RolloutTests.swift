import Foundation
import SesameDomain
import Testing

@Suite("Staged rollouts: sticky, independent, uniform buckets, decided in resolve")
struct RolloutTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let appID = "ABCDE12345.com.example.app"

    /// 100,000 simulated installs: random 32-byte key ids, base64url as token subjects carry them.
    /// Touched only off the cooperative pool (`offThePool`): made on first use, while every other
    /// test that touches it waits.
    static let installs: [String] = randomInstalls(100_000)

    /// A few installs, for the tests that need only some inside and outside a rollout.
    static let few: [String] = randomInstalls(500)

    static func randomInstalls(_ count: Int) -> [String] {
        var generator = SystemRandomNumberGenerator()
        return (0..<count).map { _ in
            Base64.urlEncode((0..<4).flatMap { _ in withUnsafeBytes(of: generator.next() as UInt64, Array.init) })
        }
    }

    /// Runs `work` on a thread of its own and returns what it measured (asserted on the test's own
    /// task): 100,000 hashes take seconds in a debug build, and on the cooperative pool (two threads
    /// on two cores) they stalled every test running beside them, timers included.
    func offThePool<Measured: Sendable>(_ work: @escaping @Sendable () -> Measured) async -> Measured {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: work()) }
        }
    }

    func rollout(_ percent: Double, salt: String = "salt-a", paused: Bool = false, previous: String? = "old") -> Rollout<String> {
        Rollout(id: UUID(), appID: appID, basisPoints: RolloutBucket.basisPoints(percent: percent)!, salt: salt, paused: paused, previous: previous)
    }

    func share(_ rollout: Rollout<String>) -> Double {
        Double(Self.installs.count { rollout.includes(install: $0) }) / Double(Self.installs.count) * 100
    }

    @Test("the measured split over 100,000 keys is the share asked for (within 0.6 points), and printed")
    func uniformSplit() async {
        let percents = [1.0, 5, 25, 50, 90]
        let (measured, none, all) = await offThePool {
            (percents.map { share(rollout($0)) }, share(rollout(0)), share(rollout(100)))
        }
        for (percent, measured) in zip(percents, measured) {
            print(String(format: "rollout at %5.1f %%: %6.3f %% of 100,000 installs got the new revision", percent, measured))
            // 0.6 points is 3.8 standard errors at 50 %, more elsewhere.
            #expect(abs(measured - percent) < 0.6, "asked \(percent) %, measured \(measured) %")
        }
        #expect(none == 0)
        #expect(all == 100)
    }

    @Test("buckets are uniform: every hundredth of the range holds about 1 % of installs (chi-square)")
    func uniformBuckets() async {
        let appID = appID
        let counts = await offThePool {
            var counts = [Int](repeating: 0, count: 100)
            for install in Self.installs { counts[RolloutBucket.of(appID: appID, salt: "s", install: install) / 100] += 1 }
            return counts
        }
        let expected = Double(counts.reduce(0, +)) / 100
        let chiSquare = counts.reduce(0.0) { $0 + pow(Double($1) - expected, 2) / expected }
        // 99 degrees of freedom: above 160 would happen by chance about once in 10,000 runs.
        #expect(chiSquare < 160, "chi-square \(chiSquare)")
    }

    @Test("sticky: an install keeps its bucket, and widening only adds installs")
    func sticky() async {
        let install = Self.few[0]
        #expect(RolloutBucket.of(appID: appID, salt: "s", install: install) == RolloutBucket.of(appID: appID, salt: "s", install: install))
        let narrow = rollout(5), wide = rollout(20)
        let (atFive, atTwenty) = await offThePool {
            (Set(Self.installs.filter { narrow.includes(install: $0) }), Set(Self.installs.filter { wide.includes(install: $0) }))
        }
        #expect(atFive.isSubset(of: atTwenty))
        #expect(atTwenty.count > atFive.count * 3)
    }

    @Test("independent: two rollouts' salts pick unrelated installs; another app buckets differently")
    func independent() async {
        let one = rollout(50, salt: "one"), two = rollout(50, salt: "two")
        let overlap = await offThePool {
            let first = Set(Self.installs.filter { one.includes(install: $0) })
            let second = Set(Self.installs.filter { two.includes(install: $0) })
            return Double(first.intersection(second).count) / Double(Self.installs.count) * 100
        }
        #expect(abs(overlap - 25) < 1, "overlap \(overlap) %")
        let sameSalt = Self.few.count {
            RolloutBucket.of(appID: appID, salt: "one", install: $0) == RolloutBucket.of(appID: "OTHER.app", salt: "one", install: $0)
        }
        #expect(sameSalt < 5)
        // Parts are length-prefixed: moving a character from one part to the next changes the bucket.
        let moved = Self.few.count {
            RolloutBucket.of(appID: "ab", salt: "c" + $0, install: "") == RolloutBucket.of(appID: "a", salt: "bc" + $0, install: "")
        }
        #expect(moved < 5)
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
        let inside = try #require(Self.few.first { rollout(10).includes(install: $0) })
        let outside = try #require(Self.few.first { !rollout(10).includes(install: $0) })
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
        let inside = try #require(Self.few.first { rollout(10).includes(install: $0) })
        let outside = try #require(Self.few.first { !rollout(10).includes(install: $0) })
        var release = AppRelease<String>(configs: ["2.*": "new", "*": "any"], rollouts: ["2.*": rollout(10, previous: nil)])
        #expect(outcome(release, "2.1", install: inside) == "new via 2.* (in)")
        #expect(outcome(release, "2.1", install: outside) == "any via *")
        release.configs["*"] = nil
        #expect(outcome(release, "2.1", install: outside) == "none")
    }

    @Test("kill switches and revocations stay above a rollout")
    func rulesFirst() throws {
        let inside = try #require(Self.few.first { rollout(50).includes(install: $0) })
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
        let tester = Self.few[0]
        let someone = Self.few[1]
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

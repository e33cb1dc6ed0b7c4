import Foundation
import SesameDomain
import SesameJSON
import Testing

@Suite("Trust tiers")
struct TrustTierTests {
    @Test("tiers order unattested < debug < attested; each satisfies itself and those below")
    func order() {
        #expect(TrustTier.unattested < .debug && TrustTier.debug < .attested)
        #expect(TrustTier.attested.satisfies(.debug) && TrustTier.debug.satisfies(.debug))
        #expect(!TrustTier.debug.satisfies(.attested) && !TrustTier.unattested.satisfies(.debug))
    }

    @Test("a key not named needs attested; what a tier may not see is withheld and named")
    func visibility() throws {
        let tiers = ConfigTiers(["features": .unattested, "beta": .debug])
        let object: [String: JSONValue] = ["api_keys": .object(["stripe": .string("sk")]), "features": .bool(true), "beta": .integer(1)]
        let unattested = tiers.visible(object, to: .unattested)
        #expect(unattested.visible == ["features": .bool(true)] && unattested.withheld == ["api_keys", "beta"])
        let debug = tiers.visible(object, to: .debug)
        #expect(debug.visible.keys.sorted() == ["beta", "features"] && debug.withheld == ["api_keys"])
        let attested = tiers.visible(object, to: .attested)
        #expect(attested.visible == object && attested.withheld.isEmpty)
        #expect(ConfigTiers().visible(object, to: .debug).visible.isEmpty)
        #expect(!tiers.isAttestedOnly && ConfigTiers(["a": .attested]).isAttestedOnly)
    }

    @Test("tiers are stored as a plain JSON object, and an unknown tier name is refused")
    func coding() throws {
        let tiers = ConfigTiers(["features": .unattested])
        let json = String(decoding: try JSONEncoder().encode(tiers), as: UTF8.self)
        #expect(json == #"{"features":"unattested"}"#)
        #expect(try JSONDecoder().decode(ConfigTiers.self, from: Data(json.utf8)) == tiers)
        #expect(throws: (any Error).self) { try JSONDecoder().decode(ConfigTiers.self, from: Data(#"{"a":"trusted"}"#.utf8)) }
    }
}

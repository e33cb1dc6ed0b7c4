import Foundation
import SesameDomain
import Testing

@Suite("Domain types")
struct DomainTests {
    @Test("lookup order: exact, patch wildcard, minor wildcard, default; short versions read with zeros; garbage refused")
    func lookupOrder() {
        #expect(VersionPattern.lookupOrder(for: "2.1.3") == ["2.1.3", "2.1.*", "2.*", "*"])
        #expect(VersionPattern.lookupOrder(for: "2") == ["2.0.0", "2.0.*", "2.*", "*"])
        #expect(VersionPattern.lookupOrder(for: "02.1") == ["2.1.0", "2.1.*", "2.*", "*"])
        for bad in ["", "2.x", "1.2.3.4", "-1", "2..1", "1.2.", "１.2.3", "9999999999.1.1"] {
            #expect(VersionPattern.lookupOrder(for: bad) == nil, "\(bad)")
        }
    }

    @Test("app identifiers: Apple's team id and bundle id rules")
    func appIdentifier() throws {
        #expect(try AppIdentifier(teamID: "A1B2C3D4E5", bundleID: "com.my-app.ios").description == "A1B2C3D4E5.com.my-app.ios")
        for (team, bundle) in [("a1b2c3d4e5", "com.app"), ("A1B2C3D4E", "com.app"), ("A1B2C3D4E5", "com app"), ("A1B2C3D4E5", ".com.app"),
            ("A1B2C3D4E5", "com..app"), ("A1B2C3D4E5", ""), ("A1B2C3D4E5", "com.app/x")]
        {
            #expect(throws: AppIdentifier.Invalid.self, "\(team) \(bundle)") { try AppIdentifier(teamID: team, bundleID: bundle) }
        }
    }

    @Test("JSON values keep integers, numbers, booleans, nulls and nesting")
    func jsonValues() throws {
        let text = #"{"a":1,"b":1.5,"c":true,"d":null,"e":["x",{"f":-9007199254740993}]}"#
        let value = try JSONDecoder().decode(JSONValue.self, from: Data(text.utf8))
        #expect(value.objectValue?["a"] == .integer(1))
        #expect(value.objectValue?["b"] == .number(1.5))
        #expect(value.objectValue?["c"] == .bool(true))
        #expect(value.objectValue?["d"] == .null)
        #expect(value.objectValue?["e"] == .array([.string("x"), .object(["f": .integer(-9_007_199_254_740_993)])]))
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        #expect(String(decoding: try encoder.encode(value), as: UTF8.self) == text)
    }
}

import Foundation
import SesameDomain
import SesameJSON
import Testing

@Suite("Domain types")
struct DomainTests {
    @Test("lookup order: exact, patch wildcard, minor wildcard, default; short versions read with zeros; garbage refused")
    func lookupOrder() {
        #expect(AppVersion("2.1.3")?.lookupOrder == ["2.1.3", "2.1.*", "2.*", "*"])
        #expect(AppVersion("2")?.lookupOrder == ["2.0.0", "2.0.*", "2.*", "*"])
        #expect(AppVersion("02.1")?.lookupOrder == ["2.1.0", "2.1.*", "2.*", "*"])
        for bad in ["", "2.x", "1.2.3.4", "-1", "2..1", "1.2.", "１.2.3", "9999999999.1.1", "99999999999999999999", "+1", " 1", "1.٣"] {
            #expect(AppVersion(bad)?.lookupOrder == nil, "\(bad)")
            #expect(AppVersion(bad) == nil, "\(bad)")
        }
    }

    @Test("versions: at most 9 digits a part, missing parts are 0, the text is kept")
    func appVersions() throws {
        let version = try #require(AppVersion("999999999.0"))
        #expect(version.components == [999_999_999, 0, 0])
        #expect(version.text == "999999999.0")
        #expect(version.description == "999999999.0.0")
        #expect(AppVersion("1234567890") == nil)
    }

    @Test("patterns: every shape matches what it should and nothing else; oversize parts are refused")
    func patterns() throws {
        let v213 = try #require(AppVersion("2.1.3"))
        let v2 = try #require(AppVersion("2"))
        for (pattern, matches213, matches2) in [("*", true, true), ("2.*", true, true), ("2.1.*", true, false), ("2.1.3", true, false),
            ("2.0.*", false, true), ("2.0.0", false, true), ("3.*", false, false)]
        {
            #expect(try VersionPattern(pattern).matches(v213) == matches213, "\(pattern)")
            #expect(try VersionPattern(pattern).matches(v2) == matches2, "\(pattern)")
        }
        for bad in ["", "2", "2.1", "*.1", "2.*.*", "1234567890.*", "99999999999999999999.*", "2.1.3.*", "x.*"] {
            #expect(throws: VersionPattern.InvalidPattern.self, "\(bad)") { try VersionPattern(bad) }
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

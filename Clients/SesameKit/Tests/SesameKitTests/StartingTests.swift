import Foundation
import SesameKitTesting
import Testing

@testable import SesameKit

/// What an iOS developer meets first: the configuration read from the app's Info.plist, the shared
/// client, a fetch that does not wait for the network while the saved config is fresh, and errors
/// that say what to do.
@Suite("SesameKit's first lines")
struct StartingTests {
    /// A bundle folder holding `info` as its Info.plist.
    static func bundle(_ info: [String: String]) throws -> Bundle {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sesamekit-bundle-\(UUID().uuidString).app")
        let contents = folder.appendingPathComponent("Contents")
        try FileManager.default.createDirectory(at: contents, withIntermediateDirectories: true)
        let plist = try PropertyListSerialization.data(fromPropertyList: info, format: .xml, options: 0)
        try plist.write(to: contents.appendingPathComponent("Info.plist"))
        return try #require(Bundle(url: folder))
    }

    static let info: [String: String] = [
        "CFBundleIdentifier": "com.example.shop", "CFBundleShortVersionString": "3.4.1", "SesameBaseURL": "https://sesame.example.com",
        "SesameTeamID": "A1B2C3D4E5",
    ]

    @Test("the configuration comes from the app's Info.plist: the address and team id, the bundle id and version")
    func configurationFromInfoPlist() throws {
        let configuration = try SesameClient.Configuration(bundle: Self.bundle(Self.info))
        #expect(configuration.baseURL == URL(string: "https://sesame.example.com"))
        #expect(configuration.teamID == "A1B2C3D4E5" && configuration.bundleID == "com.example.shop" && configuration.appVersion == "3.4.1")
        #expect(configuration.appID == "A1B2C3D4E5.com.example.shop")
    }

    @Test("a missing or malformed Info.plist key is named in the error")
    func configurationErrors() throws {
        for (key, expected) in [
            ("SesameBaseURL", SesameClient.ConfigurationError.missing("SesameBaseURL")), ("SesameTeamID", .missing("SesameTeamID")),
            ("CFBundleShortVersionString", .missing("CFBundleShortVersionString")),
        ] {
            var info = Self.info
            info[key] = nil
            #expect(throws: expected) { try SesameClient.Configuration(bundle: Self.bundle(info)) }
        }
        var info = Self.info
        info["SesameBaseURL"] = "sesame.example.com"
        #expect(throws: SesameClient.ConfigurationError.malformed("SesameBaseURL", "an https:// address")) {
            try SesameClient.Configuration(bundle: Self.bundle(info))
        }
        #expect(SesameClient.ConfigurationError.missing("SesameTeamID").localizedDescription.contains("SesameTeamID"))
    }

    @Test("configure() makes the shared client from the Info.plist; off Apple platforms with the debug token, and stops without one")
    func configureFromTheBundle() async throws {
        // The only test that sets the shared client (others running meanwhile never replace it).
        let bundle = try Self.bundle(Self.info)
        let client = SesameClient.configure(bundle: bundle, environment: ["SESAME_DEBUG_TOKEN": "sesame_debug_ci"])
        #expect(SesameClient.isConfigured && SesameClient.shared === client && client.configuration.appID == "A1B2C3D4E5.com.example.shop")
        await #expect(processExitsWith: .failure) {
            SesameClient.configure(bundle: try StartingTests.bundle(StartingTests.info), environment: [:])
        }
    }

    @Test("reading SesameClient.shared before configure stops the app with a message")
    func sharedBeforeConfigure() async {
        await #expect(processExitsWith: .failure) {
            _ = SesameClient.shared
        }
    }

    @Test("a fresh saved config is served with no request; forceRefresh asks Sesame all the same")
    func forceRefresh() async throws {
        let harness = Harness()
        harness.sesame.with { $0.refreshAfter = 3600 }
        let client = harness.client()
        _ = try await client.fetchConfig()
        let sent = harness.sesame.requestPaths.count
        #expect(try await client.fetchConfig().source == .cache)
        #expect(harness.sesame.requestPaths.count == sent)
        #expect(try await client.fetchConfig(forceRefresh: true).source == .network)
        #expect(harness.sesame.requestPaths.count == sent + 1 && harness.sesame.requestPaths.last == "/v1/config")
    }

    @Test("every error has a stable code, a description and a suggestion of what to do; the kill switch's reason is data")
    func errorsSayWhatToDo() {
        let errors: [(SesameError, String)] = [
            (.versionDisabled(reason: "Update, please."), "version_disabled"), (.noConfig, "no_config"),
            (.staleCacheExpired, "stale_cache_expired"), (.unsupportedDevice, "unsupported_device"),
            (.rateLimited(retryAfter: .seconds(5)), "rate_limited"), (.server(code: "tier_not_allowed", message: "No."), "tier_not_allowed"),
            (.network(underlying: "offline"), "network"), (.zeroKnowledgeConfig("wrong password"), "zero_knowledge_config"),
            (.secureStore("locked"), "secure_store"),
        ]
        for (error, code) in errors {
            #expect(error.code == code)
            #expect(error.errorDescription?.isEmpty == false && error.recoverySuggestion?.isEmpty == false, "\(code)")
        }
        #expect(SesameError.versionDisabled(reason: "Update, please.").killSwitchReason == "Update, please.")
        #expect(SesameError.noConfig.killSwitchReason == nil)
        #expect(SesameError.versionDisabled(reason: "x").recoverySuggestion?.contains("update screen") == true)
        #expect(SesameError.network(underlying: "offline").isTransient && !SesameError.noConfig.isTransient)
    }
}

@Suite("SesameKit's version")
struct VersionTests {
    @Test("SesameClient.version is the newest release in the CHANGELOG")
    func versionMatchesChangelog() throws {
        let changelog = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../../CHANGELOG.md").standardized
        let text = try String(contentsOf: changelog, encoding: .utf8)
        let released = text.split(separator: "\n").first { $0.hasPrefix("## ") && $0 != "## Unreleased" }
        #expect(released == "## \(SesameClient.version)")
    }
}

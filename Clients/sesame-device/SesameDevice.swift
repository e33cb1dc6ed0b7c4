import ArgumentParser
import Foundation
import SesameKit
import SesameKitTesting

/// `sesame-device`: a software device on SesameKit, for operators to smoke-test a deployment —
/// attest, fetch the config, show what came back — without an iPhone. Its App Attest authority is
/// trusted only by servers given its root (`SESAME_APP_ATTEST_EXTRA_ROOTS`, development only).
@main
struct SesameDevice: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sesame-device", abstract: "A software device for smoke-testing a Sesame deployment.",
        subcommands: [Fetch.self, Root.self])
}

/// Where the software authority is kept between runs.
struct AuthorityOptions: ParsableArguments {
    @Option(help: "The software App Attest authority (PEM, created on first use; keep it private).")
    var authority: String = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".sesame-device/authority.pem").path

    /// The authority in `authority`, made (valid a year) when there is none or it has expired.
    func load() throws -> SoftwareAttestationAuthority {
        let url = URL(fileURLWithPath: authority)
        if let text = try? String(contentsOf: url, encoding: .utf8), let saved = try? SoftwareAttestationAuthority(pemBundle: text),
            saved.expiresAt > Date().addingTimeInterval(3600)
        {
            return saved
        }
        let made = SoftwareAttestationAuthority(lifetime: 365 * 86400)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try made.pemBundle.write(to: url, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
        return made
    }
}

/// `sesame-device root`: the root certificate a development server must trust.
struct Root: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the authority's root certificate (PEM) for SESAME_APP_ATTEST_EXTRA_ROOTS.")

    @OptionGroup var authority: AuthorityOptions

    func run() throws {
        print(try authority.load().rootCertificatePEM, terminator: "")
    }
}

/// `sesame-device fetch`: one launch of a fresh install.
struct Fetch: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Attest a fresh software device and fetch the config, as an app at launch.")

    @OptionGroup var authority: AuthorityOptions
    @Option(help: "Sesame's address, e.g. https://sesame.example.com.") var url: String
    @Option(name: .customLong("team-id")) var teamID: String
    @Option(name: .customLong("bundle-id")) var bundleID: String
    @Option(name: .customLong("app-version")) var appVersion: String
    @Option(help: "Comma-separated dot paths to fetch instead of the whole config.") var scope: String?
    @Option(name: .customLong("root-out"), help: "Also write the authority's root certificate (PEM) here.") var rootOut: String?
    @Flag(help: "Print the config's values; by default only its paths are shown, as they may be secrets.") var showValues = false
    @Flag(
        name: .customLong("debug-token"),
        help: "Use the debug token in SESAME_DEBUG_TOKEN instead of the software attester (a CI job's way in; debug tier).")
    var useDebugToken = false

    func run() async throws {
        guard let baseURL = URL(string: url), baseURL.scheme != nil else { throw ValidationError("--url must be an address such as https://sesame.example.com") }
        let attestation: any AppAttestProvider
        if useDebugToken {
            // From the environment only: a token on the command line lands in shell history and process lists.
            guard let token = ProcessInfo.processInfo.environment["SESAME_DEBUG_TOKEN"], !token.isEmpty else {
                throw ValidationError("--debug-token reads the token from SESAME_DEBUG_TOKEN, which is not set")
            }
            attestation = DebugTokenAttest(token: token)
        } else {
            let authority = try authority.load()
            if let rootOut { try authority.rootCertificatePEM.write(toFile: rootOut, atomically: true, encoding: .utf8) }
            attestation = SoftwareAppAttest(appID: "\(teamID).\(bundleID)", authority: authority)
        }
        let client = SesameClient(
            configuration: SesameClient.Configuration(baseURL: baseURL, teamID: teamID, bundleID: bundleID, appVersion: appVersion),
            attestation: attestation, store: InMemorySecureStore())
        let config: SesameConfig
        do {
            config = try await client.fetchConfig(scope: scope.map { $0.split(separator: ",").map(String.init) } ?? [])
        } catch {
            FileHandle.standardError.write(Data("sesame-device: \(error.localizedDescription)\n".utf8))
            throw ExitCode.failure
        }
        print(
            "Fetched revision \(config.revision) of pattern '\(config.matchedPattern)' for version \(appVersion) (\(config.source), tier \(config.tier?.rawValue ?? "-")).")
        if !config.withheld.isEmpty { print("Withheld at this tier: \(config.withheld.joined(separator: ", "))") }
        for (path, value) in Self.paths(of: config.values) {
            print(showValues ? "\(path) = \(value)" : path)
        }
    }

    /// Every leaf of `values` by dot path, sorted.
    static func paths(of values: [String: SesameConfig.Value], prefix: String = "") -> [(String, String)] {
        values.sorted { $0.key < $1.key }.flatMap { key, value -> [(String, String)] in
            let path = prefix.isEmpty ? key : prefix + "." + key
            switch value {
            case .object(let inner): return paths(of: inner, prefix: path)
            case .string(let text): return [(path, text)]
            case .integer(let number): return [(path, String(number))]
            case .number(let number): return [(path, String(number))]
            case .bool(let flag): return [(path, String(flag))]
            case .array(let items): return [(path, "[\(items.count) items]")]
            case .null: return [(path, "null")]
            }
        }
    }
}

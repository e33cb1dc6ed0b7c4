import Foundation
import Logging
import Testing

@testable import SesameConfiguration

@Suite("Service configuration from the environment")
struct ServiceConfigurationTests {
    let validKey = Data(repeating: 7, count: 32).base64EncodedString()

    @Test("development runs with no variables at all, generating an ephemeral master key and saying so")
    func developmentDefaults() throws {
        let configuration = try ServiceConfiguration(environment: [:], defaultPort: 8081)
        #expect(configuration.environment == .development)
        #expect(configuration.port == 8081 && configuration.metricsPort == nil)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.logFormat == .json)
        #expect(configuration.masterKey.isEphemeral)
        #expect(configuration.masterKey.current.count == 32)
        #expect(configuration.warnings.contains { $0.contains("SESAME_MASTER_KEY") })
    }

    @Test("the database pool holds 20 connections unless SESAME_DATABASE_POOL_SIZE says otherwise")
    func databasePoolSize() throws {
        #expect(try ServiceConfiguration(environment: [:], defaultPort: 1).databasePoolSize == 20)
        #expect(try ServiceConfiguration(environment: ["SESAME_DATABASE_POOL_SIZE": "6"], defaultPort: 1).databasePoolSize == 6)
    }

    @Test("two ephemeral master keys differ")
    func ephemeralKeysAreRandom() throws {
        let first = try ServiceConfiguration(environment: [:], defaultPort: 1)
        let second = try ServiceConfiguration(environment: [:], defaultPort: 1)
        #expect(first.masterKey.current != second.masterKey.current)
    }

    @Test("production without a master key refuses to start, naming the variable")
    func productionRequiresMasterKey() {
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration(
                environment: ["SESAME_ENVIRONMENT": "production", "SESAME_DATABASE_URL": "postgres://u@h/d"],
                defaultPort: 8081
            )
        }
        do {
            _ = try ServiceConfiguration(
                environment: ["SESAME_ENVIRONMENT": "production", "SESAME_DATABASE_URL": "postgres://u@h/d"], defaultPort: 8081)
        } catch {
            #expect(error.variable == "SESAME_MASTER_KEY")
        }
    }

    @Test("production without an operator token refuses to start where it is read (admin's server); elsewhere, and in development, it runs without one")
    func productionRequiresOperatorToken() throws {
        let production = ["SESAME_ENVIRONMENT": "production", "SESAME_MASTER_KEY": validKey, "SESAME_DATABASE_URL": "postgres://u@h/d"]
        do {
            _ = try ServiceConfiguration(environment: production, defaultPort: 1, requiresOperatorToken: true)
            Issue.record("expected a configuration error")
        } catch {
            #expect(error.variable == "SESAME_OPERATOR_TOKEN")
        }
        // Auth, delivery and the one-shot commands (the migration job) start without the break-glass credential.
        #expect(try ServiceConfiguration(environment: production, defaultPort: 1).operatorToken == nil)
        #expect(try ServiceConfiguration(environment: [:], defaultPort: 1).operatorToken == nil)
    }

    @Test("production without a database URL refuses to start")
    func productionRequiresDatabase() {
        do {
            _ = try ServiceConfiguration(environment: ["SESAME_ENVIRONMENT": "production", "SESAME_MASTER_KEY": validKey], defaultPort: 1)
            Issue.record("expected a configuration error")
        } catch {
            #expect(error.variable == "SESAME_DATABASE_URL")
        }
    }

    @Test("SESAME_DATABASE_URL_FILE: the URL is read from the file and the file is kept to follow; beside SESAME_DATABASE_URL, empty or unreadable, it is refused")
    func databaseURLFile() throws {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-database-url-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: file) }
        try "postgres://sesame:secret@primary.example:6432/sesame\n".write(toFile: file, atomically: true, encoding: .utf8)
        let configuration = try ServiceConfiguration(environment: ["SESAME_DATABASE_URL_FILE": file], defaultPort: 1)
        #expect(configuration.databaseURL == "postgres://sesame:secret@primary.example:6432/sesame")
        #expect(configuration.databaseURLFile == file)
        #expect(try ServiceConfiguration(environment: ["SESAME_DATABASE_URL": "postgres://u@h/d"], defaultPort: 1).databaseURLFile == nil)

        let both = ["SESAME_DATABASE_URL_FILE": file, "SESAME_DATABASE_URL": "postgres://u@h/d"]
        try "  \n".write(toFile: file + ".empty", atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file + ".empty") }
        for environment in [both, ["SESAME_DATABASE_URL_FILE": file + ".missing"], ["SESAME_DATABASE_URL_FILE": file + ".empty"]] {
            do {
                _ = try ServiceConfiguration(environment: environment, defaultPort: 1)
                Issue.record("accepted \(environment)")
            } catch {
                #expect(error.variable == "SESAME_DATABASE_URL_FILE")
                #expect(!error.description.contains("secret"))
            }
        }
    }

    @Test(
        "a malformed master key is refused in every environment",
        arguments: ["not base64!", Data(repeating: 1, count: 16).base64EncodedString(), Data(repeating: 1, count: 33).base64EncodedString()]
    )
    func malformedMasterKey(value: String) {
        for mode in ["development", "production"] {
            do {
                _ = try ServiceConfiguration(
                    environment: ["SESAME_ENVIRONMENT": mode, "SESAME_MASTER_KEY": value, "SESAME_DATABASE_URL": "postgres://u@h/d"],
                    defaultPort: 1
                )
                Issue.record("expected a configuration error in \(mode)")
            } catch {
                #expect(error.variable == "SESAME_MASTER_KEY")
                #expect(error.expectation.contains("32"))
            }
        }
    }

    @Test("the dashboard origin: localhost:8080 in development, none in production unless set, https only in production")
    func dashboardOrigin() throws {
        let production: [String: String] = [
            "SESAME_ENVIRONMENT": "production", "SESAME_MASTER_KEY": validKey, "SESAME_DATABASE_URL": "postgres://u:p@db:5432/sesame",
            "SESAME_OPERATOR_TOKEN": String(repeating: "t", count: 32),
        ]
        #expect(try ServiceConfiguration(environment: ["SESAME_MASTER_KEY": validKey], defaultPort: 8083).dashboardOrigin == "http://localhost:8080")
        #expect(try ServiceConfiguration(environment: production, defaultPort: 8083).dashboardOrigin == nil)
        #expect(try ServiceConfiguration(environment: production.merging(["SESAME_DASHBOARD_ORIGIN": ""]) { $1 }, defaultPort: 8083).dashboardOrigin == nil)
        let set = try ServiceConfiguration(
            environment: production.merging(["SESAME_DASHBOARD_ORIGIN": "https://sesame.example.com/"]) { $1 }, defaultPort: 8083)
        #expect(set.dashboardOrigin == "https://sesame.example.com")
        for bad in ["http://sesame.example.com", "https://sesame.example.com/dashboard", "sesame.example.com"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try ServiceConfiguration(environment: production.merging(["SESAME_DASHBOARD_ORIGIN": bad]) { $1 }, defaultPort: 8083)
            }
        }
    }

    @Test("Apple's DeviceCheck URL: Apple's by default, another https server when set, http only in development")
    func appleDeviceCheckURL() throws {
        let production: [String: String] = [
            "SESAME_ENVIRONMENT": "production", "SESAME_MASTER_KEY": validKey, "SESAME_DATABASE_URL": "postgres://u:p@db:5432/sesame",
            "SESAME_OPERATOR_TOKEN": String(repeating: "t", count: 32),
        ]
        #expect(try ServiceConfiguration(environment: production, defaultPort: 8083).appleDeviceCheckURL == "https://api.devicecheck.apple.com")
        let proxied = production.merging(["SESAME_APPLE_DEVICECHECK_URL": "https://egress.example.com/apple"]) { $1 }
        #expect(try ServiceConfiguration(environment: proxied, defaultPort: 8083).appleDeviceCheckURL == "https://egress.example.com/apple")
        let local = ["SESAME_MASTER_KEY": validKey, "SESAME_APPLE_DEVICECHECK_URL": "http://127.0.0.1:9"]
        #expect(try ServiceConfiguration(environment: local, defaultPort: 8083).appleDeviceCheckURL == "http://127.0.0.1:9")
        #expect(
            try ServiceConfiguration(environment: production, defaultPort: 8083).appleDeviceCheckDevelopmentURL
                == "https://api.development.devicecheck.apple.com")
        let development = production.merging(["SESAME_APPLE_DEVICECHECK_DEVELOPMENT_URL": "https://egress.example.com/apple-dev"]) { $1 }
        #expect(try ServiceConfiguration(environment: development, defaultPort: 8083).appleDeviceCheckDevelopmentURL == "https://egress.example.com/apple-dev")
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration(environment: production.merging(["SESAME_APPLE_DEVICECHECK_DEVELOPMENT_URL": "http://127.0.0.1:9"]) { $1 }, defaultPort: 8083)
        }
        let defaults = try ServiceConfiguration(environment: production, defaultPort: 8083)
        #expect(defaults.receiptRedemptionInterval == .seconds(10))
        #expect(defaults.attestationRoundInterval == .seconds(10))
        #expect(throws: (any Error).self) { try ServiceConfiguration(environment: production.merging(["SESAME_ATTESTATION_ROUND_INTERVAL": "2h"]) { $1 }, defaultPort: 8083) }
        #expect(try ServiceConfiguration(environment: production.merging(["SESAME_RECEIPT_REDEMPTION_INTERVAL": "1s"]) { $1 }, defaultPort: 8083).receiptRedemptionInterval == .seconds(1))
        #expect(defaults.appleAppAttestDataURL == "https://data.appattest.apple.com")
        #expect(defaults.appleAppAttestDataDevelopmentURL == "https://data-development.appattest.apple.com")
        let data = production.merging(["SESAME_APPLE_APP_ATTEST_DATA_URL": "https://egress.example.com/appattest"]) { $1 }
        #expect(try ServiceConfiguration(environment: data, defaultPort: 8083).appleAppAttestDataURL == "https://egress.example.com/appattest")
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration(environment: production.merging(["SESAME_APPLE_APP_ATTEST_DATA_URL": "data.appattest.apple.com"]) { $1 }, defaultPort: 8083)
        }
        for bad in ["http://127.0.0.1:9", "api.devicecheck.apple.com", "https://api.devicecheck.apple.com?key=1", "ftp://apple.example"] {
            #expect(throws: ConfigurationError.self, "\(bad)") {
                try ServiceConfiguration(environment: production.merging(["SESAME_APPLE_DEVICECHECK_URL": bad]) { $1 }, defaultPort: 8083)
            }
        }
    }

    @Test("production with every secret set starts, reading previous master keys for rotation")
    func productionComplete() throws {
        let previous = Data(repeating: 9, count: 32).base64EncodedString()
        let configuration = try ServiceConfiguration(
            environment: [
                "SESAME_ENVIRONMENT": "PRODUCTION", "SESAME_MASTER_KEY": validKey, "SESAME_MASTER_KEY_PREVIOUS": previous,
                "SESAME_DATABASE_URL": "postgres://u:p@db:5432/sesame", "SESAME_PORT": "9000", "SESAME_METRICS_PORT": "9090", "SESAME_LOG_FORMAT": "text",
                "SESAME_LOG_LEVEL": "debug", "SESAME_KAFKA_BROKERS": "k1:9092, k2:9092", "SESAME_KAFKA_IDEMPOTENCE": "off",
                "SESAME_OPERATOR_TOKEN": String(repeating: "t", count: 32), "SESAME_KAFKA_SECURITY_PROTOCOL": "sasl_plaintext",
                "SESAME_KAFKA_SASL_USERNAME": "sesame", "SESAME_KAFKA_SASL_PASSWORD": "p",
            ],
            defaultPort: 8081
        )
        #expect(configuration.environment == .production)
        #expect(configuration.masterKey.current == Array(repeating: 7, count: 32))
        #expect(configuration.masterKey.previous == [Array(repeating: 9, count: 32)])
        #expect(!configuration.masterKey.isEphemeral)
        #expect(configuration.port == 9000 && configuration.metricsPort == 9090)
        #expect(configuration.logFormat == .text)
        #expect(configuration.logLevel == .debug)
        #expect(configuration.kafkaBrokers == ["k1:9092", "k2:9092"])
        #expect(configuration.kafkaIdempotence == false)
        #expect(configuration.warnings.isEmpty)
    }

    @Test(
        "invalid values name their variable",
        arguments: [
            ("SESAME_PORT", "70000"), ("SESAME_PORT", "http"), ("SESAME_ENVIRONMENT", "staging"),
            ("SESAME_LOG_FORMAT", "xml"), ("SESAME_LOG_LEVEL", "loud"), ("SESAME_MAX_BODY_BYTES", "-1"),
            ("SESAME_KAFKA_BROKERS", ","), ("SESAME_KAFKA_IDEMPOTENCE", "maybe"),
            ("SESAME_TRUSTED_PROXIES", "10.0.0.0/33"), ("SESAME_TRUSTED_PROXIES", "gateway"), ("SESAME_TRUSTED_PROXIES", "10.1.2.3/8/1"),
            ("SESAME_ACCESS_TOKEN_TTL", "30s"), ("SESAME_ACCESS_TOKEN_TTL", "2d"), ("SESAME_ACCESS_TOKEN_TTL", "15 minutes"),
            ("SESAME_REFRESH_TOKEN_TTL", "10m"), ("SESAME_REFRESH_TOKEN_TTL", "-1d"), ("SESAME_SIGNING_KEY_ROTATION", "400d"),
            ("SESAME_SIGNING_KEY_ROTATION", "99999999999999999d"), ("SESAME_ATTEST_ADMISSION_RATE", "0"), ("SESAME_OPERATOR_TOKEN", "short"), ("SESAME_MAX_CONFIG_BYTES", "0"), ("SESAME_MAX_BLOB_BYTES", "-5"),
            ("SESAME_DELIVERY_RESYNC_INTERVAL", "1s"), ("SESAME_DELIVERY_RESYNC_INTERVAL", "2h"),
            ("SESAME_RECEIPT_REDEMPTION_INTERVAL", "0"), ("SESAME_RECEIPT_REDEMPTION_INTERVAL", "2h"),
            ("SESAME_DATABASE_POOL_SIZE", "0"), ("SESAME_DATABASE_POOL_SIZE", "eight"),
            ("SESAME_METRICS_PORT", "1"), ("SESAME_METRICS_PORT", "0"), ("SESAME_METRICS_PORT", "metrics"),
        ]
    )
    func invalidValues(variable: String, value: String) {
        do {
            _ = try ServiceConfiguration(environment: [variable: value], defaultPort: 1)
            Issue.record("expected \(variable)=\(value) to be refused")
        } catch {
            #expect(error.variable == variable)
        }
    }

    @Test("token lifetimes, trusted proxies and the admission rate are read with units and defaults")
    func tokensAndProxies() throws {
        let defaults = try ServiceConfiguration(environment: [:], defaultPort: 1)
        #expect(defaults.tokenLifetimes == TokenLifetimes())
        #expect(defaults.tokenLifetimes.access == .seconds(900))
        #expect(defaults.trustedProxies.isEmpty)
        #expect(defaults.attestAdmissionRate == 50)

        let configured = try ServiceConfiguration(
            environment: [
                "SESAME_ACCESS_TOKEN_TTL": "5m", "SESAME_REFRESH_TOKEN_TTL": "7d", "SESAME_SIGNING_KEY_ROTATION": "3600",
                "SESAME_TRUSTED_PROXIES": "127.0.0.1, 10.0.0.0/8,fd00::/8", "SESAME_ATTEST_ADMISSION_RATE": "90",
            ], defaultPort: 1)
        #expect(configured.tokenLifetimes == TokenLifetimes(access: .seconds(300), refresh: .seconds(7 * 86400), signingKeyRotation: .seconds(3600)))
        #expect(configured.trustedProxies.map(\.description) == ["127.0.0.1", "10.0.0.0/8", "fd00::/8"])
        #expect(configured.attestAdmissionRate == 90)

        // A refresh token may not live shorter than the access token it renews.
        #expect(throws: ConfigurationError.self) {
            try ServiceConfiguration(environment: ["SESAME_ACCESS_TOKEN_TTL": "24h", "SESAME_REFRESH_TOKEN_TTL": "2h"], defaultPort: 1)
        }
    }

    @Test("IP ranges: CIDR membership for IPv4 and IPv6, IPv4-mapped peers, garbage refused")
    func ipAddressRanges() throws {
        let private10 = try #require(IPAddressRange("10.0.0.0/8"))
        #expect(private10.contains("10.255.1.2"))
        #expect(!private10.contains("11.0.0.1"))
        #expect(private10.contains("::ffff:10.0.0.7"))
        #expect(!private10.contains("not an address"))
        let odd = try #require(IPAddressRange("192.168.1.128/25"))
        #expect(odd.contains("192.168.1.200"))
        #expect(!odd.contains("192.168.1.127"))
        let single = try #require(IPAddressRange("127.0.0.1"))
        #expect(single.contains("127.0.0.1"))
        #expect(!single.contains("127.0.0.2"))
        let v6 = try #require(IPAddressRange("fd00::/8"))
        #expect(v6.contains("fd12:3456::1"))
        #expect(!v6.contains("fe80::1"))
        #expect(!v6.contains("10.0.0.1"))
        #expect(try #require(IPAddressRange("0.0.0.0/0")).contains("8.8.8.8"))
        for garbage in ["", "10.0.0.0/", "10.0.0.0/x", "10.0.0.256", "::1/129", "example.com"] {
            #expect(IPAddressRange(garbage) == nil, "\(garbage)")
        }
    }

    @Test("extra App Attest roots: read from a PEM file in development, refused in production")
    func extraAppAttestRoots() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-test-root-\(UUID().uuidString).pem").path
        try "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let development = try ServiceConfiguration(environment: ["SESAME_APP_ATTEST_EXTRA_ROOTS": path], defaultPort: 1)
        #expect(development.appAttestExtraRootsPEM?.contains("BEGIN CERTIFICATE") == true)
        #expect(development.warnings.contains { $0.contains("SESAME_APP_ATTEST_EXTRA_ROOTS") })
        do {
            _ = try ServiceConfiguration(environment: ["SESAME_APP_ATTEST_EXTRA_ROOTS": "/no/such/file.pem"], defaultPort: 1)
            Issue.record("expected a configuration error for a missing file")
        } catch {
            #expect(error.variable == "SESAME_APP_ATTEST_EXTRA_ROOTS")
        }
        do {
            _ = try ServiceConfiguration(
                environment: [
                    "SESAME_ENVIRONMENT": "production", "SESAME_DATABASE_URL": "postgres://u@h/d", "SESAME_MASTER_KEY": validKey,
                    "SESAME_APP_ATTEST_EXTRA_ROOTS": path,
                ], defaultPort: 1)
            Issue.record("expected a configuration error in production")
        } catch {
            #expect(error.variable == "SESAME_APP_ATTEST_EXTRA_ROOTS")
        }
    }
}

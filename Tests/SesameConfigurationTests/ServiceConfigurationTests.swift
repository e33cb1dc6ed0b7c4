import Foundation
import Testing

@testable import SesameConfiguration

@Suite("Service configuration from the environment")
struct ServiceConfigurationTests {
    let validKey = Data(repeating: 7, count: 32).base64EncodedString()

    @Test("development runs with no variables at all, generating an ephemeral master key and saying so")
    func developmentDefaults() throws {
        let configuration = try ServiceConfiguration(environment: [:], defaultPort: 8081)
        #expect(configuration.environment == .development)
        #expect(configuration.port == 8081)
        #expect(configuration.host == "127.0.0.1")
        #expect(configuration.logFormat == .json)
        #expect(configuration.masterKey.isEphemeral)
        #expect(configuration.masterKey.current.count == 32)
        #expect(configuration.warnings.contains { $0.contains("SESAME_MASTER_KEY") })
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

    @Test("production without a database URL refuses to start")
    func productionRequiresDatabase() {
        do {
            _ = try ServiceConfiguration(environment: ["SESAME_ENVIRONMENT": "production", "SESAME_MASTER_KEY": validKey], defaultPort: 1)
            Issue.record("expected a configuration error")
        } catch {
            #expect(error.variable == "SESAME_DATABASE_URL")
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

    @Test("production with every secret set starts, reading previous master keys for rotation")
    func productionComplete() throws {
        let previous = Data(repeating: 9, count: 32).base64EncodedString()
        let configuration = try ServiceConfiguration(
            environment: [
                "SESAME_ENVIRONMENT": "PRODUCTION", "SESAME_MASTER_KEY": validKey, "SESAME_MASTER_KEY_PREVIOUS": previous,
                "SESAME_DATABASE_URL": "postgres://u:p@db:5432/sesame", "SESAME_PORT": "9000", "SESAME_LOG_FORMAT": "text",
                "SESAME_LOG_LEVEL": "debug", "SESAME_KAFKA_BROKERS": "k1:9092, k2:9092", "SESAME_KAFKA_IDEMPOTENCE": "off",
            ],
            defaultPort: 8081
        )
        #expect(configuration.environment == .production)
        #expect(configuration.masterKey.current == Array(repeating: 7, count: 32))
        #expect(configuration.masterKey.previous == [Array(repeating: 9, count: 32)])
        #expect(!configuration.masterKey.isEphemeral)
        #expect(configuration.port == 9000)
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

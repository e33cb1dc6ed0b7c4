import Foundation
import Testing

@testable import SesameConfiguration

@Suite("Kafka authentication and TLS from the environment")
struct KafkaSecurityTests {
    /// A readable file to stand for a PEM path.
    static let readableFile = #filePath

    static func security(_ variables: [String: String]) throws(ConfigurationError) -> KafkaSecurity {
        try KafkaSecurity(EnvironmentReader(variables))
    }

    static func refusal(_ variables: [String: String]) -> ConfigurationError? {
        do {
            _ = try security(variables)
            return nil
        } catch {
            return error
        }
    }

    @Test("unset is plaintext with no extra properties but the protocol")
    func plaintextByDefault() throws {
        let security = try Self.security([:])
        #expect(security == .plaintext)
        #expect(security.clientProperties == ["security.protocol": "plaintext"])
    }

    @Test("sasl_ssl with SCRAM, a CA and a client certificate become librdkafka's properties; printing never shows the password")
    func saslSSL() throws {
        let security = try Self.security([
            "SESAME_KAFKA_SECURITY_PROTOCOL": "SASL_SSL", "SESAME_KAFKA_SASL_MECHANISM": "SCRAM-SHA-512",
            "SESAME_KAFKA_SASL_USERNAME": "sesame", "SESAME_KAFKA_SASL_PASSWORD": "pa55word-of-the-broker",
            "SESAME_KAFKA_TLS_CA_FILE": Self.readableFile, "SESAME_KAFKA_TLS_CERT_FILE": Self.readableFile,
            "SESAME_KAFKA_TLS_KEY_FILE": Self.readableFile,
        ])
        #expect(
            security.clientProperties == [
                "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "sesame",
                "sasl.password": "pa55word-of-the-broker", "ssl.endpoint.identification.algorithm": "https",
                "ssl.ca.location": Self.readableFile, "ssl.certificate.location": Self.readableFile, "ssl.key.location": Self.readableFile,
            ])
        #expect(!"\(security)".contains("pa55word"))
        let defaultMechanism = try Self.security([
            "SESAME_KAFKA_SECURITY_PROTOCOL": "sasl_plaintext", "SESAME_KAFKA_SASL_USERNAME": "u", "SESAME_KAFKA_SASL_PASSWORD": "p",
        ])
        #expect(defaultMechanism.clientProperties["sasl.mechanisms"] == "SCRAM-SHA-256")
        #expect(defaultMechanism.clientProperties["ssl.ca.location"] == nil)
    }

    @Test("inconsistent settings are refused, naming the variable")
    func refusals() {
        let sasl = ["SESAME_KAFKA_SECURITY_PROTOCOL": "sasl_plaintext", "SESAME_KAFKA_SASL_USERNAME": "u", "SESAME_KAFKA_SASL_PASSWORD": "p"]
        let cases: [([String: String], String)] = [
            (["SESAME_KAFKA_SECURITY_PROTOCOL": "tls"], "SESAME_KAFKA_SECURITY_PROTOCOL"),
            (sasl.filter { $0.key != "SESAME_KAFKA_SASL_PASSWORD" }, "SESAME_KAFKA_SASL_PASSWORD"),
            (sasl.filter { $0.key != "SESAME_KAFKA_SASL_USERNAME" }, "SESAME_KAFKA_SASL_USERNAME"),
            // PLAIN sends the password: only inside TLS.
            (sasl.merging(["SESAME_KAFKA_SASL_MECHANISM": "plain"]) { $1 }, "SESAME_KAFKA_SASL_MECHANISM"),
            (sasl.merging(["SESAME_KAFKA_SASL_MECHANISM": "gssapi"]) { $1 }, "SESAME_KAFKA_SASL_MECHANISM"),
            // Credentials or TLS files that would be ignored are a mistake, not a default.
            (["SESAME_KAFKA_SASL_USERNAME": "u"], "SESAME_KAFKA_SASL_USERNAME"),
            (["SESAME_KAFKA_TLS_CA_FILE": Self.readableFile], "SESAME_KAFKA_TLS_CA_FILE"),
            (["SESAME_KAFKA_SECURITY_PROTOCOL": "ssl", "SESAME_KAFKA_TLS_CA_FILE": "/nonexistent/ca.pem"], "SESAME_KAFKA_TLS_CA_FILE"),
            (["SESAME_KAFKA_SECURITY_PROTOCOL": "ssl", "SESAME_KAFKA_TLS_CERT_FILE": Self.readableFile], "SESAME_KAFKA_TLS_KEY_FILE"),
        ]
        for (variables, variable) in cases {
            #expect(Self.refusal(variables)?.variable == variable, "\(variables)")
        }
        #expect(Self.refusal(sasl.merging(["SESAME_KAFKA_SECURITY_PROTOCOL": "sasl_ssl", "SESAME_KAFKA_SASL_MECHANISM": "plain"]) { $1 }) == nil)
    }

    @Test("production over plaintext Kafka starts, with a warning; the service configuration carries the settings")
    func productionWarning() throws {
        let production = [
            "SESAME_ENVIRONMENT": "production", "SESAME_DATABASE_URL": "postgres://u@h/d",
            "SESAME_MASTER_KEY": Data(repeating: 7, count: 32).base64EncodedString(), "SESAME_OPERATOR_TOKEN": String(repeating: "t", count: 32),
        ]
        let plain = try ServiceConfiguration(environment: production, defaultPort: 8081)
        #expect(plain.warnings.contains { $0.contains("SESAME_KAFKA_SECURITY_PROTOCOL is plaintext") })
        let secured = try ServiceConfiguration(
            environment: production.merging([
                "SESAME_KAFKA_SECURITY_PROTOCOL": "sasl_plaintext", "SESAME_KAFKA_SASL_USERNAME": "sesame", "SESAME_KAFKA_SASL_PASSWORD": "p",
            ]) { $1 }, defaultPort: 8081)
        #expect(!secured.warnings.contains { $0.contains("SESAME_KAFKA") })
        #expect(secured.kafkaSecurity.credentials?.username == "sesame")
    }
}

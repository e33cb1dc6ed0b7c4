import AppAttestTesting
import Foundation
import SesameConfiguration
import SesameKafka
import Testing

/// The test broker speaks neither TLS nor SASL it can be given users for, so these check what can
/// be checked without one: librdkafka (as built here) takes every setting Sesame can produce, and
/// refuses a bad one when the client is created, before anything is served.
@Suite("librdkafka takes Sesame's Kafka security settings")
struct KafkaSecurityClientTests {
    static func configuration(_ security: KafkaSecurity) -> KafkaConfiguration {
        KafkaConfiguration(brokers: ["127.0.0.1:1"], clientID: "security-test", extraProperties: security.clientProperties)
    }

    static func withFile<T>(_ contents: String, _ body: (String) throws -> T) throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-kafka-\(UUID().uuidString).pem").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }

    @Test("sasl_ssl with each SCRAM mechanism and a CA file: the producer and the consumer are created")
    func saslSSLAccepted() throws {
        let caPEM = try SoftwareAttester().rootCertificate.serializeAsPEM().pemString
        try Self.withFile(caPEM) { caFile in
            for mechanism in [KafkaSecurity.SASLMechanism.scramSHA256, .scramSHA512, .plain] {
                let security = KafkaSecurity(
                    securityProtocol: .saslSSL, credentials: .init(mechanism: mechanism, username: "sesame", password: "secret"),
                    caFile: caFile, clientCertificate: nil)
                _ = try KafkaProducer(configuration: Self.configuration(security), logger: testLogger)
                _ = try KafkaBroadcastConsumer(configuration: Self.configuration(security), topics: ["t"], startPosition: .end, logger: testLogger)
            }
        }
    }

    @Test("a CA file that holds no certificate is refused when the client is created, and the error does not show the password")
    func badCAFileRefused() throws {
        try Self.withFile("not a certificate") { caFile in
            let security = KafkaSecurity(
                securityProtocol: .saslSSL, credentials: .init(mechanism: .scramSHA256, username: "sesame", password: "do-not-print-me"),
                caFile: caFile, clientCertificate: nil)
            do {
                _ = try KafkaProducer(configuration: Self.configuration(security), logger: testLogger)
                Issue.record("a CA file without a certificate was accepted")
            } catch {
                #expect(!"\(error)".contains("do-not-print-me"))
            }
        }
    }
}

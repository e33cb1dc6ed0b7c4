import AppAttestTesting
import Foundation
import SesameConfiguration
import SesameKafka
import SwiftASN1
import Testing

/// The test broker speaks neither TLS nor SASL it can be given users for, so these check what can
/// be checked without one: librdkafka (as built here) takes every setting Sesame can produce, and
/// refuses a bad one when the client is created, before anything is served. (Producers only, made
/// and destroyed off the cooperative pool: destroying a client blocks its thread while librdkafka
/// stops, and a consumer that never ran would wait there for a group it cannot reach.)
@Suite("librdkafka takes Sesame's Kafka security settings")
struct KafkaSecurityClientTests {
    static func configuration(_ security: KafkaSecurity) -> KafkaConfiguration {
        KafkaConfiguration(brokers: ["127.0.0.1:1"], clientID: "security-test", extraProperties: security.clientProperties)
    }

    /// Runs `body` on a thread of its own, so librdkafka's blocking calls never hold a pool thread.
    static func onOwnThread(_ body: @escaping @Sendable () throws -> Void) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    static func withFile<T>(_ contents: String, _ body: (String) throws -> T) throws -> T {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-kafka-\(UUID().uuidString).pem").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        return try body(path)
    }

    @Test("sasl_ssl with each SASL mechanism and a CA file: librdkafka creates the client")
    func saslSSLAccepted() async throws {
        let caPEM = try SoftwareAttester().rootCertificate.serializeAsPEM().pemString
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("sesame-kafka-\(UUID().uuidString).pem").path
        try caPEM.write(toFile: path, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: path) }
        try await Self.onOwnThread {
            for mechanism in [KafkaSecurity.SASLMechanism.scramSHA256, .scramSHA512, .plain] {
                let security = KafkaSecurity(
                    securityProtocol: .saslSSL, credentials: .init(mechanism: mechanism, username: "sesame", password: "secret"),
                    caFile: path, clientCertificate: nil)
                _ = try KafkaProducer(configuration: Self.configuration(security), logger: testLogger)
            }
        }
    }

    @Test("a CA file that holds no certificate is refused when the client is created, and the error does not show the password")
    func badCAFileRefused() async throws {
        try await Self.onOwnThread { try Self.withFile("not a certificate") { caFile in
            let security = KafkaSecurity(
                securityProtocol: .saslSSL, credentials: .init(mechanism: .scramSHA256, username: "sesame", password: "do-not-print-me"),
                caFile: caFile, clientCertificate: nil)
            do {
                _ = try KafkaProducer(configuration: Self.configuration(security), logger: testLogger)
                Issue.record("a CA file without a certificate was accepted")
            } catch {
                #expect(!"\(error)".contains("do-not-print-me"))
            }
        } }
    }
}

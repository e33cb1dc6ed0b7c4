import Foundation

/// How a Sesame process authenticates to Kafka and protects the connection: `SESAME_KAFKA_*`,
/// turned into the standard Kafka client properties (librdkafka's names).
///
/// | variable | meaning | default |
/// | --- | --- | --- |
/// | `SESAME_KAFKA_SECURITY_PROTOCOL` | `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl` | `plaintext` |
/// | `SESAME_KAFKA_SASL_MECHANISM` | `scram-sha-256`, `scram-sha-512`, or `plain` (only over `sasl_ssl`) | `scram-sha-256` |
/// | `SESAME_KAFKA_SASL_USERNAME`, `SESAME_KAFKA_SASL_PASSWORD` | the SASL credentials; required with `sasl_*` | none |
/// | `SESAME_KAFKA_TLS_CA_FILE` | PEM file of the CAs the brokers' certificates chain to | the system's CAs |
/// | `SESAME_KAFKA_TLS_CERT_FILE`, `SESAME_KAFKA_TLS_KEY_FILE` | PEM client certificate and key, for brokers that ask for one | none |
public struct KafkaSecurity: Sendable, Equatable {
    /// The transport and whether SASL runs over it.
    public enum SecurityProtocol: String, Sendable, CaseIterable {
        case plaintext, ssl
        case saslPlaintext = "sasl_plaintext"
        case saslSSL = "sasl_ssl"

        var usesSASL: Bool { self == .saslPlaintext || self == .saslSSL }
        var usesTLS: Bool { self == .ssl || self == .saslSSL }
    }

    /// The SASL mechanism. SCRAM never sends the password; PLAIN does, so it needs TLS.
    public enum SASLMechanism: String, Sendable, CaseIterable {
        case scramSHA256 = "scram-sha-256"
        case scramSHA512 = "scram-sha-512"
        case plain
    }

    /// SASL credentials; printing them never shows the password.
    public struct Credentials: Sendable, Equatable, CustomStringConvertible {
        public let mechanism: SASLMechanism
        public let username: String
        public let password: String

        /// Creates credentials.
        public init(mechanism: SASLMechanism, username: String, password: String) {
            self.mechanism = mechanism
            self.username = username
            self.password = password
        }

        public var description: String { "\(mechanism.rawValue) as \(username)" }
    }

    /// A client certificate and its key, PEM files.
    public struct ClientCertificate: Sendable, Equatable {
        public let certificateFile: String
        public let keyFile: String
    }

    public let securityProtocol: SecurityProtocol
    /// Set exactly when the protocol is `sasl_*`.
    public let credentials: Credentials?
    /// CA bundle for the brokers' certificates; nil for the system's.
    public let caFile: String?
    /// Client certificate and key, both or neither.
    public let clientCertificate: ClientCertificate?

    /// No authentication, no TLS: a broker on a private network or on loopback.
    public static let plaintext = KafkaSecurity(securityProtocol: .plaintext, credentials: nil, caFile: nil, clientCertificate: nil)

    /// Reads and checks the settings: credentials with SASL and only then, PLAIN only over TLS,
    /// TLS files only with TLS and readable.
    public init(_ reader: EnvironmentReader) throws(ConfigurationError) {
        let securityProtocol = try reader.value("SESAME_KAFKA_SECURITY_PROTOCOL", default: SecurityProtocol.plaintext)
        let username = reader.string("SESAME_KAFKA_SASL_USERNAME")
        let password = reader.string("SESAME_KAFKA_SASL_PASSWORD")
        var credentials: Credentials?
        if securityProtocol.usesSASL {
            let mechanism = try reader.value("SESAME_KAFKA_SASL_MECHANISM", default: SASLMechanism.scramSHA256)
            guard let username else { throw ConfigurationError(variable: "SESAME_KAFKA_SASL_USERNAME", expectation: "set with \(securityProtocol.rawValue)") }
            guard let password else { throw ConfigurationError(variable: "SESAME_KAFKA_SASL_PASSWORD", expectation: "set with \(securityProtocol.rawValue)") }
            if mechanism == .plain, !securityProtocol.usesTLS {
                throw ConfigurationError(
                    variable: "SESAME_KAFKA_SASL_MECHANISM", expectation: "scram-sha-256 or scram-sha-512 without TLS: plain would send the password in clear")
            }
            credentials = Credentials(mechanism: mechanism, username: username, password: password)
        } else {
            for name in ["SESAME_KAFKA_SASL_MECHANISM", "SESAME_KAFKA_SASL_USERNAME", "SESAME_KAFKA_SASL_PASSWORD"] where reader.string(name) != nil {
                throw ConfigurationError(variable: name, expectation: "unset unless SESAME_KAFKA_SECURITY_PROTOCOL is sasl_plaintext or sasl_ssl")
            }
        }

        let caFile = reader.string("SESAME_KAFKA_TLS_CA_FILE")
        let certificateFile = reader.string("SESAME_KAFKA_TLS_CERT_FILE")
        let keyFile = reader.string("SESAME_KAFKA_TLS_KEY_FILE")
        for (name, path) in [("SESAME_KAFKA_TLS_CA_FILE", caFile), ("SESAME_KAFKA_TLS_CERT_FILE", certificateFile), ("SESAME_KAFKA_TLS_KEY_FILE", keyFile)] {
            guard let path else { continue }
            guard securityProtocol.usesTLS else {
                throw ConfigurationError(variable: name, expectation: "unset unless SESAME_KAFKA_SECURITY_PROTOCOL is ssl or sasl_ssl")
            }
            guard FileManager.default.isReadableFile(atPath: path) else { throw ConfigurationError(variable: name, expectation: "a readable PEM file, got \"\(path)\"") }
        }
        guard (certificateFile == nil) == (keyFile == nil) else {
            throw ConfigurationError(
                variable: certificateFile == nil ? "SESAME_KAFKA_TLS_CERT_FILE" : "SESAME_KAFKA_TLS_KEY_FILE",
                expectation: "set together with \(certificateFile == nil ? "SESAME_KAFKA_TLS_KEY_FILE" : "SESAME_KAFKA_TLS_CERT_FILE")")
        }
        self.init(
            securityProtocol: securityProtocol, credentials: credentials, caFile: caFile,
            clientCertificate: certificateFile.flatMap { certificate in keyFile.map { ClientCertificate(certificateFile: certificate, keyFile: $0) } })
    }

    /// Creates settings directly (tests, embedding).
    public init(securityProtocol: SecurityProtocol, credentials: Credentials?, caFile: String?, clientCertificate: ClientCertificate?) {
        self.securityProtocol = securityProtocol
        self.credentials = credentials
        self.caFile = caFile
        self.clientCertificate = clientCertificate
    }

    /// The client properties that say all of this. Holds the password: never log it.
    public var clientProperties: [String: String] {
        var properties = ["security.protocol": securityProtocol.rawValue]
        if let credentials {
            properties["sasl.mechanisms"] = credentials.mechanism.rawValue.uppercased()
            properties["sasl.username"] = credentials.username
            properties["sasl.password"] = credentials.password
        }
        if securityProtocol.usesTLS {
            // Verify the broker's name against its certificate (librdkafka's default, said aloud).
            properties["ssl.endpoint.identification.algorithm"] = "https"
            if let caFile { properties["ssl.ca.location"] = caFile }
            if let clientCertificate {
                properties["ssl.certificate.location"] = clientCertificate.certificateFile
                properties["ssl.key.location"] = clientCertificate.keyFile
            }
        }
        return properties
    }
}

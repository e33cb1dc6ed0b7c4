import ArgumentParser
import Crypto
import Foundation
import SwiftASN1
import X509

/// `sesame pins add`.
struct PinsAddCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add", abstract: "Pin a host (or *.domain, one label) to a TLS key: apps using the registry trust only pinned keys there.",
        discussion: "Give the key as --spki-sha256 (base64 SHA-256 of the SubjectPublicKeyInfo) or --from-cert cert.pem (the leaf certificate).")

    @OptionGroup var server: ServerOptions
    @Option(help: "The host, or *.example.com for any one-label subdomain (never the apex).") var domain: String
    @Option(name: .customLong("spki-sha256"), help: "Base64 SHA-256 of the certificate's SubjectPublicKeyInfo.") var spkiSHA256: String?
    @Option(name: .customLong("from-cert"), help: "A PEM certificate whose public key to pin.") var certificate: String?
    @Option(help: "The host the key was read from.") var fqdn: String?
    @Option(help: "Unix time (seconds) after which the pin no longer counts.") var expire: Int64?

    func run() async throws {
        try await reportingFailures {
            let key: String
            switch (spkiSHA256, certificate) {
            case (let digest?, nil): key = digest
            case (nil, let path?): key = try Self.spkiSHA256(ofCertificateAt: path)
            default: throw CLIFailure("give exactly one of --spki-sha256 and --from-cert", exitCode: 2)
            }
            let client = try server.client()
            _ = try await client.call { try await $0.addPin(body: .json(.init(domainName: domain, key: key, fqdn: fqdn, expire: expire))) }
            server.confirm(client, or: "Pinned.")
        }
    }

    /// Base64 SHA-256 of the DER SubjectPublicKeyInfo of the PEM certificate at `path`.
    static func spkiSHA256(ofCertificateAt path: String) throws(CLIFailure) -> String {
        let pem = String(decoding: try readFile(path), as: UTF8.self)
        do {
            let certificate = try Certificate(pemEncoded: pem)
            let spki = try certificate.publicKey.serializeAsPEM().derBytes
            return Data(SHA256.hash(data: spki)).base64EncodedString()
        } catch {
            throw CLIFailure("\(path) is not a PEM certificate Sesame can read (\(error))", exitCode: 2)
        }
    }
}

/// `sesame pins list`.
struct PinsListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the app's pins.")

    @OptionGroup var server: ServerOptions

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let pins = try await client.call { try await $0.listPins().ok.body.json.pins }
            if server.printedReply(of: client) { return }
            guard !pins.isEmpty else { return Console.current.out("No pins. Add one with: sesame pins add --domain api.example.com --from-cert cert.pem") }
            Console.current.out(
                Table.render(
                    ["DOMAIN", "SPKI SHA-256", "FQDN", "EXPIRES", "ADDED"],
                    pins.map {
                        [$0.domainName, $0.key, text($0.fqdn), text($0.expire.map { Date(timeIntervalSince1970: Double($0)) }), text($0.date)]
                    }))
        }
    }
}

/// `sesame pins remove`.
struct PinsRemoveCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "remove", abstract: "Remove a pin.")

    @OptionGroup var server: ServerOptions
    @Option(help: "The pin's domain, as listed.") var domain: String
    @Option(name: .customLong("spki-sha256"), help: "The pin's key, as listed.") var spkiSHA256: String

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            _ = try await client.call { try await $0.removePin(query: .init(domainName: domain, key: spkiSHA256)) }
            server.confirm(client, or: "Removed.")
        }
    }
}

/// `sesame pins signing-key`.
struct PinsSigningKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "signing-key",
        abstract: "Print the registry's public signing key as the one-line base64 the SslPinning SDK takes (--pem for PEM).")

    @OptionGroup var server: ServerOptions
    @Flag(help: "Print the PEM instead.") var pem = false
    @Flag(help: "The key prepared to sign next (pins prepare-signing-key), not the one signing now.") var next = false

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let keys = try await client.call { try await $0.getPinSigningKey().ok.body.json }
            if server.printedReply(of: client) { return }
            guard let key = next ? keys.next : keys.active else {
                throw CLIFailure(next ? "no key is prepared; run pins prepare-signing-key" : "no key signs yet; add a pin first", exitCode: 1)
            }
            Console.current.out(pem ? key.pem : key.base64)
        }
    }
}

/// `sesame pins prepare-signing-key`.
struct PinsPrepareSigningKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prepare-signing-key",
        abstract: "Make the key the next rotation switches to, without signing with it yet; prints its public key (one-line base64).",
        discussion: "Ship this key in an app update first; once enough installs have it, run pins rotate-signing-key.")

    @OptionGroup var server: ServerOptions
    @Option(help: "2048 or 4096.") var bits = 2048

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let key = try await client.call { try await $0.preparePinSigningKey(body: .json(.init(bits: bits))).ok.body.json }
            if server.printedReply(of: client) { return }
            Console.current.out(key.base64)
            Console.current.error("Prepared; the registry is still signed with the current key until pins rotate-signing-key.")
        }
    }
}

/// `sesame pins rotate-signing-key`.
struct PinsRotateSigningKeyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate-signing-key",
        abstract: "Sign the registry with the prepared key (or, without one, a new key) from now on; prints its public key.",
        discussion: """
            Apps verify the registry with the key they were built with: run pins prepare-signing-key, \
            ship its key in an app update (apps may carry both), wait until enough installs have it, then rotate.
            """)

    @OptionGroup var server: ServerOptions
    @Option(help: "2048 or 4096, when no key is prepared.") var bits = 2048

    func run() async throws {
        try await reportingFailures {
            let client = try server.client()
            let key = try await client.call { try await $0.rotatePinSigningKey(body: .json(.init(bits: bits))).ok.body.json }
            if server.printedReply(of: client) { return }
            Console.current.out(key.base64)
            Console.current.error("The registry is signed with this key from now on.")
        }
    }
}

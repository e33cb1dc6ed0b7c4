import CryptoExtras
import Foundation
import SesamePinning
import Testing

@testable import SesameKit

@Suite("SesameKit: fetching the pin registry")
struct PinRegistryFetchTests {
    /// Serves one fixed answer.
    struct Fixed: HTTPTransport {
        let response: HTTPExchange.Response
        func send(_ request: HTTPExchange.Request) async throws -> HTTPExchange.Response {
            #expect(request.url.path == "/v1/pins/A1B2C3D4E5.com.example.app.json" && request.headers["authorization"] == nil)
            return response
        }
    }

    @Test("a registry that verifies gives its hosts; one signed by another key, or refused, gives an error")
    func fetch() async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let pins = [PinRegistry.Pin(domainName: "sesame.example.com", key: Data(repeating: 7, count: 32).base64EncodedString(), date: "2026-11-23T00:00:00Z")]
        let document = Data(try PinRegistry(keys: pins).signedDocument(with: key))
        let signingKey = Data(key.publicKey.pemRepresentation.utf8).base64EncodedString()
        let url = URL(string: "https://sesame.example.com")!
        let hosts = try await SesameClient.pinnedHosts(
            baseURL: url, teamID: "A1B2C3D4E5", bundleID: "com.example.app", signingKey: signingKey,
            transport: Fixed(response: .init(status: 200, body: document)))
        #expect(hosts.pins == pins && hosts.isPinned("sesame.example.com"))

        let other = Data(try _RSA.Signing.PrivateKey(keySize: .bits2048).publicKey.pemRepresentation.utf8).base64EncodedString()
        await #expect {
            try await SesameClient.pinnedHosts(
                baseURL: url, teamID: "A1B2C3D4E5", bundleID: "com.example.app", signingKey: other, transport: Fixed(response: .init(status: 200, body: document)))
        } throws: { error in
            if case .server(code: "pin_registry_invalid", _) = error as? SesameError { return true }
            return false
        }
        let missing = HTTPExchange.Response(status: 404, body: Data(#"{"error":{"code":"no_pins","message":"none"}}"#.utf8))
        await #expect(throws: SesameError.server(code: "no_pins", message: "none")) {
            try await SesameClient.pinnedHosts(baseURL: url, teamID: "A1B2C3D4E5", bundleID: "com.example.app", signingKey: signingKey, transport: Fixed(response: missing))
        }
    }

    @Test("with a store, a registry older than one accepted before is refused, and so is one without a sequence after one with")
    func staleRegistriesAreRefused() async throws {
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let signingKey = Data(key.publicKey.pemRepresentation.utf8).base64EncodedString()
        let pins = [PinRegistry.Pin(domainName: "sesame.example.com", key: Data(repeating: 7, count: 32).base64EncodedString(), date: "2026-11-23T00:00:00Z")]
        let store = InMemorySecureStore()
        func fetch(_ sequence: Int64?) async throws(SesameError) -> PinnedHosts {
            let document = Data(try! PinRegistry(keys: pins, sequence: sequence).signedDocument(with: key))
            return try await SesameClient.pinnedHosts(
                baseURL: URL(string: "https://sesame.example.com")!, teamID: "A1B2C3D4E5", bundleID: "com.example.app", signingKey: signingKey,
                transport: Fixed(response: .init(status: 200, body: document)), store: store)
        }
        #expect(try await fetch(5).sequence == 5)
        #expect(try await fetch(5).sequence == 5, "the same registry again is fine")
        for stale: Int64? in [4, nil] {
            await #expect {
                try await fetch(stale)
            } throws: { error in
                if case .server(code: "pin_registry_stale", _) = error as? SesameError { return true }
                return false
            }
        }
        #expect(try await fetch(6).sequence == 6)
        await #expect(throws: SesameError.self) { try await fetch(5) }
    }
}

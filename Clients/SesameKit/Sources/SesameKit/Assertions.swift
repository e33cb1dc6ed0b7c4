import Foundation

/// An App Attest assertion over an action's data, for the app's own backend, which has Sesame
/// check it (`POST /v1/verify/assertion` with a backend key): proof that this attested install
/// asked for exactly this action, once.
public struct AppAssertion: Sendable, Equatable {
    /// The App Attest key id (base64).
    public let keyID: String
    /// The assertion object.
    public let assertion: Data
    /// The bytes asserted over: the action's data, as the backend must forward them.
    public let clientData: Data

    /// The headers to send with the action: `X-App-Attest-Key-Id` and `X-App-Attest-Assertion`
    /// (base64). The action's body is the client data itself.
    public var headers: [String: String] {
        ["X-App-Attest-Key-Id": keyID, "X-App-Attest-Assertion": assertion.base64EncodedString()]
    }

    /// What the backend sends to `POST /v1/verify/assertion`.
    public var verificationBody: [String: String] {
        ["keyId": keyID, "clientData": clientData.base64EncodedString(), "assertion": assertion.base64EncodedString()]
    }
}

extension SesameClient {
    /// An assertion by this install's App Attest key over `data` (the request body of a purchase,
    /// an account change): send `data` as the body and `headers` with it; the backend asks Sesame
    /// to check it, and each assertion passes once. Attests first if needed.
    /// - Throws: `.unsupportedDevice` where App Attest is unavailable (the Simulator, a debug token,
    ///   an unattested install), `.network` when App Attest fails for now, and what `fetchConfig`
    ///   throws while attesting.
    public func assertion(for data: Data) async throws(SesameError) -> AppAssertion {
        do {
            let (keyID, assertion) = try await tokens.assertion(over: data)
            return AppAssertion(keyID: keyID, assertion: assertion, clientData: data)
        } catch let error as SesameError {
            throw error
        } catch {
            throw .secureStore(String(describing: error))
        }
    }
}

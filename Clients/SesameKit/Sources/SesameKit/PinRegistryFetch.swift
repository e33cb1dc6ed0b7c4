import Foundation
import SesamePinning

extension SesameClient {
    /// The hosts pinned in the app's registry, from `GET /v1/pins/{teamId}.{bundleId}.json` at
    /// `baseURL`, once its signature verifies with `signingKey` (as `sesame pins:signing-key`
    /// prints it). No token is needed: the registry's signature, not the connection, is what is
    /// trusted. Hand the result to `PinnedSessionDelegate` and build the session SesameKit (and
    /// the rest of the app) talks through:
    ///
    /// ```swift
    /// let hosts = try await SesameClient.pinnedHosts(baseURL: url, teamID: team, bundleID: bundle, signingKey: key)
    /// let session = URLSession(configuration: .ephemeral, delegate: PinnedSessionDelegate(hosts: hosts), delegateQueue: nil)
    /// let client = SesameClient(configuration: …, attestation: …, store: …, transport: URLSessionTransport(session: session))
    /// ```
    /// - Throws: `SesameError.network` when the registry cannot be fetched; `.server(code:
    ///   "pin_registry_invalid", …)` when it does not verify. Never trust hosts from a registry that failed.
    public static func pinnedHosts(
        baseURL: URL, teamID: String, bundleID: String, signingKey: String, transport: any HTTPTransport = URLSessionTransport(),
        now: Date = Date()
    ) async throws(SesameError) -> PinnedHosts {
        let url = baseURL.appendingPathComponent("v1/pins/\(teamID).\(bundleID).json")
        let response: HTTPExchange.Response
        do {
            response = try await transport.send(HTTPExchange.Request(method: "GET", url: url, headers: ["accept": "application/json"]))
        } catch {
            throw .network(underlying: "the pin registry could not be fetched (\(type(of: error)))")
        }
        guard response.status == 200 else {
            let (code, message) = SesameAPI.refusal(of: response)
            throw response.status >= 500 ? .network(underlying: "Sesame answered \(response.status) (\(code))") : .server(code: code, message: message)
        }
        do {
            return PinnedHosts(pins: try PinRegistry.verified(response.body, signingKey: try PinRegistry.signingKey(signingKey), now: now))
        } catch {
            throw .server(code: "pin_registry_invalid", message: "The pin registry does not verify with the signing key the app was given (\(error)).")
        }
    }
}

import Foundation
import SesamePinning

extension SesameClient {
    /// The hosts pinned in the app's registry, from `GET /v1/pins/{teamId}.{bundleId}.json` at
    /// `baseURL`, once its signature verifies with `signingKey` (as `sesame pins signing-key`
    /// prints it). No token is needed: the registry's signature, not the connection, is what is
    /// trusted. Hand the result to `PinnedSessionDelegate` and build the session SesameKit (and
    /// the rest of the app) talks through:
    ///
    /// ```swift
    /// let hosts = try await SesameClient.pinnedHosts(baseURL: url, teamID: team, bundleID: bundle, signingKey: key)
    /// let session = URLSession(configuration: .ephemeral, delegate: PinnedSessionDelegate(hosts: hosts), delegateQueue: nil)
    /// let client = SesameClient(configuration: …, attestation: …, store: …, transport: URLSessionTransport(session: session))
    /// ```
    ///
    /// The default `transport` is an ephemeral session made for this call and dropped after it: it
    /// shares no connection, and (ephemeral) no stored TLS session, with the pinned session the app
    /// builds next. Pass the pinned session's own transport only once it exists.
    ///
    /// With a `store` (the app's `SesameKeychainStore`), SesameKit remembers the highest registry
    /// sequence it accepted for the app and refuses an older registry replayed to it, and one
    /// without a sequence once it has seen one.
    /// - Throws: `SesameError.network` when the registry cannot be fetched; `.server(code:
    ///   "pin_registry_invalid", …)` when it does not verify, `.server(code: "pin_registry_stale",
    ///   …)` when it is older than one accepted before. Never trust hosts from a registry that failed.
    public static func pinnedHosts(
        baseURL: URL, teamID: String, bundleID: String, signingKey: String, transport: any HTTPTransport = URLSessionTransport(),
        store: (any SecureStore)? = nil, now: Date = Date()
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
        let registry: PinRegistry
        do {
            registry = try PinRegistry.verifiedRegistry(response.body, signingKey: try PinRegistry.signingKey(signingKey), now: now)
        } catch {
            throw .server(code: "pin_registry_invalid", message: "The pin registry does not verify with the signing key the app was given (\(error)).")
        }
        if let store { try remember(registry.sequence, of: "\(teamID).\(bundleID)", in: store) }
        return PinnedHosts(pins: registry.keys, sequence: registry.sequence)
    }

    /// Refuses `sequence` when it is older than the one `store` holds for `appID`, else keeps it.
    private static func remember(_ sequence: Int64?, of appID: String, in store: any SecureStore) throws(SesameError) {
        let key = "sesame.pins.sequence." + appID
        let held: Int64?
        do {
            held = try store.data(for: key).flatMap { Int64(String(decoding: $0, as: UTF8.self)) }
        } catch {
            throw .secureStore("the pin registry's sequence could not be read (\(type(of: error)))")
        }
        if let held {
            guard let sequence, sequence >= held else {
                throw .server(
                    code: "pin_registry_stale",
                    message: "The pin registry is older than one this app accepted before (sequence \(sequence.map(String.init) ?? "none") < \(held)).")
            }
            guard sequence > held else { return }
        }
        guard let sequence else { return }
        do {
            try store.set(Data(String(sequence).utf8), for: key)
        } catch {
            throw .secureStore("the pin registry's sequence could not be saved (\(type(of: error)))")
        }
    }
}

import Crypto
import Foundation

/// The app's standing with Sesame: its App Attest key, its refresh token (both in the store) and
/// its access token (in memory only).
///
/// Getting a new access token is single-flight: however many callers need one at once, one
/// refresh (or attestation) runs and they all get its result, so assertions never race over the
/// key's counter and a refresh token is never presented twice. It runs as an expiring background
/// activity, so that an app leaving the foreground mid-renewal is rarely suspended before the reply
/// is saved (and if it is, auth's grace window takes the previous token once more). The new pair
/// is saved before it is used. A refresh Sesame refuses for good (`refresh_token_reused`,
/// `token_revoked`, an expired token), a key that cannot assert or one whose App Attest calls keep
/// failing on the device leads to a new key and a new attestation, with nothing for the app to do.
actor TokenSession {
    private let configuration: SesameClient.Configuration
    private let api: SesameAPI
    private let attestation: any AppAttestProvider
    private let store: any SecureStore
    private let clock: ClientClock
    private let background: any BackgroundActivity

    private var access: (token: String, expiresAt: Date)?
    private var inFlight: Task<String, any Error>?
    /// The stored key's App Attest failures in a row, as last read or written (nil: not read yet).
    private var keyFailures: Int?
    /// Whether this launch told Sesame why it asks for the unattested tier (once is enough: the
    /// counts are for a dashboard, and every renewal would inflate them).
    private var toldUnattestedReason = false

    /// How many times one attestation is tried when Apple's servers are unavailable.
    static let attestAttempts = 3
    /// How many App Attest calls in a row may fail on the device with the key kept (`invalidInput`,
    /// a system failure) before the key is given up for a new one: a key that can no longer assert
    /// would otherwise strand the install. Counted across launches; a success starts it over.
    static let keyFailuresBeforeNewKey = 3
    /// How many times one refresh is sent: a second time, with a new challenge and assertion, when
    /// the first lost a race over the key's counter or its challenge expired while the app was
    /// suspended (the refresh token is not spent by either).
    static let refreshAttempts = 2

    init(
        configuration: SesameClient.Configuration, api: SesameAPI, attestation: any AppAttestProvider, store: any SecureStore, clock: ClientClock,
        background: any BackgroundActivity
    ) {
        self.configuration = configuration
        self.api = api
        self.attestation = attestation
        self.store = store
        self.clock = clock
        self.background = background
    }

    /// A usable access token: the one held while it has a minute left, else a new one.
    func accessToken() async throws -> String {
        if let access, access.expiresAt.timeIntervalSince(clock.now()) > 60 { return access.token }
        return try await renew()
    }

    /// An assertion by the attested key over `data`, for the app's own backend to have checked.
    /// The key is attested first if it is not yet; a renewal in flight (whose refresh asserts too)
    /// finishes first, so the two do not race over the key's counter here.
    func assertion(over data: Data) async throws -> (keyID: String, assertion: Data) {
        if attestation is DebugTokenAttest || !attestation.isSupported { throw SesameError.unsupportedDevice }
        _ = try await accessToken()
        if let inFlight { _ = try? await inFlight.value }
        guard let keyID = try store.string(for: StoreKeys.keyID) else { throw SesameError.unsupportedDevice }
        guard let assertion = try await sign(keyID, over: Data(SHA256.hash(data: data))) else {
            // The key is gone or given up: the next request attests a new one; this action is asked again.
            access = nil
            throw SesameError.network(underlying: "App Attest's key could not sign and was replaced; try the action again")
        }
        return (keyID, assertion)
    }

    /// Sesame refused `token` (401 `invalid_token` or `token_revoked`): the next caller gets a new
    /// one. After an emergency revocation auth refuses the refresh too, so that is a new key.
    func discard(_ token: String) {
        if access?.token == token { access = nil }
    }

    /// Forgets everything: the access token, the key id and the refresh token (sign-out, `reset()`).
    func forgetAll() throws {
        access = nil
        try forgetKey()
    }

    /// One new access token, shared by every caller asking while it is obtained.
    private func renew() async throws -> String {
        if let inFlight { return try await inFlight.value }
        let task = Task { try await self.background.run(named: "SesameKit token renewal") { try await self.obtain() } }
        inFlight = task
        defer { inFlight = nil }
        return try await task.value
    }

    private func obtain() async throws -> String {
        if let debug = attestation as? DebugTokenAttest { return try await exchange(debug.token) }
        if let refreshToken = try store.string(for: StoreKeys.refreshToken), let keyID = try store.string(for: StoreKeys.keyID) {
            if let token = try await refresh(refreshToken, keyID: keyID) { return token }
        }
        return try await attest()
    }

    // MARK: Refresh

    /// The refreshed access token, or nil when only a new attestation will do.
    private func refresh(_ refreshToken: String, keyID: String) async throws -> String? {
        for attempt in 1...Self.refreshAttempts {
            let nonce = try await challenge()
            let clientData = try JSONEncoder().encode(AuthMessages.ClientData(challenge: nonce))
            guard let assertion = try await sign(keyID, over: Data(SHA256.hash(data: clientData))) else { return nil }
            let response = try await api.send(
                "POST", "v1/auth/refresh",
                json: AuthMessages.Refresh(
                    refreshToken: refreshToken, assertion: assertion.base64EncodedString(), clientData: clientData.base64EncodedString(),
                    appVersion: configuration.appVersion))
            if response.status == 200 { return try keep(response) }
            let (code, message) = SesameAPI.refusal(of: response)
            switch (response.status, code) {
            case (401, "assertion_invalid"), (401, "invalid_challenge"):
                // A counter race lost to another assertion by this key, or a challenge that expired
                // while the app was suspended: the token is unspent, so ask once more.
                if attempt < Self.refreshAttempts { continue }
                if code == "invalid_challenge" { throw Self.failure(response, code: code, message: message) }
                try forgetKey()
                return nil
            case (401, _), (403, "environment_not_allowed"):
                // Reused, revoked, expired or refused: the family is over. A new key starts a new one.
                try forgetKey()
                return nil
            default:
                // Never retried blindly: a refresh token presented twice revokes its whole family.
                throw Self.failure(response, code: code, message: message)
            }
        }
        return nil
    }

    /// An assertion by `keyID` over `clientDataHash`, or nil when the key is gone, or has now
    /// failed `keyFailuresBeforeNewKey` times in a row: then it is forgotten, and the next renewal
    /// attests a new one.
    private func sign(_ keyID: String, over clientDataHash: Data) async throws -> Data? {
        let assertion: Data
        do {
            assertion = try await attestation.generateAssertion(keyID, clientDataHash: clientDataHash)
        } catch AppAttestProviderError.serverUnavailable {
            throw Self.appAttestFailure(AppAttestProviderError.serverUnavailable, while: .asserting)
        } catch AppAttestProviderError.invalidKey, AppAttestProviderError.unsupported {
            // The key is gone (a restore to another device, a reset): a new key and attestation.
            try forgetKey()
            return nil
        } catch {
            if try keyFailed() { return nil }
            throw Self.appAttestFailure(error, while: .asserting)
        }
        try keyWorked()
        return assertion
    }

    /// Counts a failure of the stored key on the device; true when it was one too many and the
    /// key is forgotten.
    private func keyFailed() throws -> Bool {
        let failures = try storedKeyFailures() + 1
        if failures >= Self.keyFailuresBeforeNewKey {
            SesameLog.warning("App Attest failed \(failures) times in a row with this key: a new key will be attested")
            try forgetKey()
            return true
        }
        try store.set(Data(String(failures).utf8), for: StoreKeys.keyFailures)
        keyFailures = failures
        return false
    }

    /// The key worked: its count of failures starts over.
    private func keyWorked() throws {
        guard try storedKeyFailures() > 0 else { return }
        try store.remove(StoreKeys.keyFailures)
        keyFailures = 0
    }

    private func storedKeyFailures() throws -> Int {
        if let keyFailures { return keyFailures }
        let stored = try store.string(for: StoreKeys.keyFailures).flatMap { Int($0) } ?? 0
        keyFailures = stored
        return stored
    }

    // MARK: Attestation

    /// Attests the stored key (or a new one) and returns the access token it earns.
    private func attest() async throws -> String {
        guard attestation.isSupported else { return try await admitUnattested(reason: "unsupported") }
        // An install without a key yet follows the app's attestation ramp (one challenge serves both).
        var pending: AuthMessages.Challenge?
        if try store.string(for: StoreKeys.keyID) == nil {
            let reply = try await appChallenge()
            if let ramp = reply.attestationRamp,
                !AttestationRamp.admits(installID: try installID(), appID: "\(configuration.teamID).\(configuration.bundleID)", percent: ramp)
            {
                return try await admitUnattested(nonce: reply.nonce, reason: "outsideRamp")
            }
            pending = reply
        }
        var madeNewKey = false
        while true {
            let keyID = try await currentKey()
            let challenge: AuthMessages.Challenge
            if let reply = pending {
                challenge = reply
                pending = nil
            } else {
                challenge = try await appChallenge()
            }
            let nonce = challenge.nonce
            guard let nonceBytes = Data(base64Encoded: nonce) else { throw SesameError.server(code: "invalid_challenge", message: "The challenge is not base64.") }
            // The device token before Apple's attestation: where the app bans devices an attest
            // without one is refused, and Apple's attestation (which counts against the device)
            // would be spent for nothing.
            let deviceToken = await attestation.deviceCheckToken()
            if challenge.deviceTokenRequired == true, deviceToken == nil {
                throw SesameError.server(code: Self.deviceCheckUnavailable, message: "DeviceCheck could not make the device token this app asks for with each attest.")
            }
            let attestationObject: Data
            do {
                attestationObject = try await attestWithRetries(keyID, clientDataHash: Data(SHA256.hash(data: nonceBytes)), nonce: nonce)
                try keyWorked()
            } catch AppAttestProviderError.invalidKey {
                await reportFailure(nonce: nonce, reason: "failed")
                // This key will not attest (Apple's `invalidKey`). One new key, then give up.
                guard !madeNewKey else { throw SesameError.server(code: "attestation_failed", message: "App Attest could not attest a key.") }
                try forgetKey()
                madeNewKey = true
                continue
            }
            let response = try await api.send(
                "POST", "v1/auth/attest",
                json: AuthMessages.Attest(
                    attestationObject: attestationObject.base64EncodedString(), keyId: keyID, nonce: nonce,
                    teamId: configuration.teamID, bundleId: configuration.bundleID, appVersion: configuration.appVersion,
                    deviceToken: deviceToken?.base64EncodedString()))
            if response.status == 200 { return try keep(response) }
            let (code, message) = SesameAPI.refusal(of: response)
            if ["key_already_attested", "attestation_invalid"].contains(code), !madeNewKey {
                try forgetKey()
                madeNewKey = true
                continue
            }
            throw Self.failure(response, code: code, message: message)
        }
    }

    /// Apple's attestation of `keyID` over `clientDataHash`. Apple's guidance for
    /// `serverUnavailable`: try again later with the same key and the same `clientDataHash` (a new
    /// challenge would make a new hash), here after 2 and 4 seconds, inside the challenge's lifetime.
    /// Only `invalidKey`, or `keyFailuresBeforeNewKey` failures in a row, lead to a new key (every
    /// key counts against the device with Apple); other failures keep it and end this attempt.
    /// A failure is reported with `nonce`, the challenge it was for, for the attestation ramp.
    private func attestWithRetries(_ keyID: String, clientDataHash: Data, nonce: String) async throws -> Data {
        var unavailable = 0
        while true {
            do {
                return try await attestation.attestKey(keyID, clientDataHash: clientDataHash)
            } catch AppAttestProviderError.serverUnavailable {
                unavailable += 1
                guard unavailable < Self.attestAttempts else {
                    await reportFailure(nonce: nonce, reason: "serverUnavailable")
                    throw Self.appAttestFailure(AppAttestProviderError.serverUnavailable, while: .attesting)
                }
                try await clock.sleep(.seconds(1 << unavailable))
            } catch AppAttestProviderError.unsupported {
                throw SesameError.unsupportedDevice
            } catch AppAttestProviderError.invalidKey {
                throw AppAttestProviderError.invalidKey
            } catch {
                // A key that keeps failing here is given up as if Apple had called it invalid (and reported so).
                if try keyFailed() { throw AppAttestProviderError.invalidKey }
                await reportFailure(nonce: nonce, reason: "failed")
                throw Self.appAttestFailure(error, while: .attesting)
            }
        }
    }

    /// Tells Sesame an attestation failed on the device (`POST v1/auth/attestation-failure`), spending
    /// its unused challenge: the attestation ramp's success rate counts it. Best effort: whatever
    /// comes of it, the attestation's own failure is what the app sees.
    private func reportFailure(nonce: String, reason: String) async {
        _ = try? await api.send(
            "POST", "v1/auth/attestation-failure",
            json: AuthMessages.AttestationFailure(nonce: nonce, teamId: configuration.teamID, bundleId: configuration.bundleID, reason: reason))
    }

    /// The App Attest call that failed, as an error message names it.
    enum AppAttestStep: String {
        case creatingKey = "create a key"
        case attesting = "attest the key"
        case asserting = "sign with the key"
    }

    /// An App Attest failure on the device, as the app sees it: which step failed and why; the app
    /// tries again later.
    static func appAttestFailure(_ error: any Error, while step: AppAttestStep) -> SesameError {
        let why =
            switch error {
            case AppAttestProviderError.serverUnavailable: "Apple's App Attest servers are unavailable"
            case AppAttestProviderError.invalidInput: "the call was refused as malformed (invalidInput)"
            case AppAttestProviderError.systemFailure(let code): "a failure on this device (DCError code \(code))"
            default: "\(error)"
            }
        return .network(underlying: "App Attest could not \(step.rawValue): \(why)")
    }

    // MARK: The tiers below attested

    /// A debug token's access token (`POST /v1/auth/debug`); exchanged again when it expires.
    private func exchange(_ debugToken: String) async throws -> String {
        let response = try await api.send(
            "POST", "v1/auth/debug",
            json: AuthMessages.DebugExchange(
                debugToken: debugToken, teamId: configuration.teamID, bundleId: configuration.bundleID, appVersion: configuration.appVersion))
        if response.status == 200 { return try keep(response) }
        let (code, message) = SesameAPI.refusal(of: response)
        throw Self.failure(response, code: code, message: message)
    }

    /// A device without App Attest: an `unattested` access token when the app's policy admits such
    /// devices, else `unsupportedDevice`.
    private func admitUnattested(nonce: String? = nil, reason: String) async throws -> String {
        let challenged: String
        if let nonce { challenged = nonce } else { challenged = try await challenge() }
        let response = try await api.send(
            "POST", "v1/auth/unattested",
            json: AuthMessages.Unattested(
                nonce: challenged, teamId: configuration.teamID, bundleId: configuration.bundleID,
                appVersion: configuration.appVersion, reason: toldUnattestedReason ? nil : reason))
        if response.status == 200 {
            toldUnattestedReason = true
            return try keep(response)
        }
        let (code, message) = SesameAPI.refusal(of: response)
        if code == "unattested_not_admitted" { throw SesameError.unsupportedDevice }
        throw Self.failure(response, code: code, message: message)
    }

    /// The stored key id, or a new key's (saved before it is used).
    private func currentKey() async throws -> String {
        if let keyID = try store.string(for: StoreKeys.keyID) { return keyID }
        let keyID: String
        do {
            keyID = try await attestation.generateKey()
        } catch AppAttestProviderError.unsupported {
            throw SesameError.unsupportedDevice
        } catch {
            throw Self.appAttestFailure(error, while: .creatingKey)
        }
        try store.set(Data(keyID.utf8), for: StoreKeys.keyID)
        return keyID
    }

    private func forgetKey() throws {
        try store.remove(StoreKeys.keyID)
        try store.remove(StoreKeys.refreshToken)
        try store.remove(StoreKeys.keyFailures)
        keyFailures = 0
    }

    // MARK: Shared steps

    private func challenge() async throws -> String {
        try await challengeReply(asking: nil).nonce
    }

    /// A nonce with what the app asks of an attest: its attestation ramp, when it has one, and
    /// whether a DeviceCheck token must come with it.
    private func appChallenge() async throws -> AuthMessages.Challenge {
        try await challengeReply(asking: AuthMessages.ChallengeRequest(teamId: configuration.teamID, bundleId: configuration.bundleID))
    }

    /// The code of the error an attest ends with when the app asks for a DeviceCheck token and
    /// `DCDevice` could not make one (transient: Apple's servers, the network).
    static let deviceCheckUnavailable = "device_check_unavailable"

    private func challengeReply(asking app: AuthMessages.ChallengeRequest?) async throws -> AuthMessages.Challenge {
        let response = try await api.send("POST", "v1/auth/challenge", json: app)
        guard response.status == 200 else {
            let (code, message) = SesameAPI.refusal(of: response)
            throw Self.failure(response, code: code, message: message)
        }
        guard let challenge = try? JSONDecoder().decode(AuthMessages.Challenge.self, from: response.body) else {
            throw SesameError.server(code: "invalid_response", message: "The challenge reply cannot be read.")
        }
        return challenge
    }

    /// This install's random id (made and kept at its first use; a reinstall makes another).
    private func installID() throws -> String {
        if let stored = try store.string(for: StoreKeys.installID) { return stored }
        let made = UUID().uuidString.lowercased()
        try store.set(Data(made.utf8), for: StoreKeys.installID)
        return made
    }

    /// Saves the pair's refresh token (an attested pair has one), then holds its access token.
    private func keep(_ response: HTTPExchange.Response) throws -> String {
        guard let tokens = try? JSONDecoder().decode(AuthMessages.Tokens.self, from: response.body) else {
            throw SesameError.server(code: "invalid_response", message: "The token reply cannot be read.")
        }
        if let refreshToken = tokens.refreshToken { try store.set(Data(refreshToken.utf8), for: StoreKeys.refreshToken) }
        access = (tokens.accessToken, clock.now().addingTimeInterval(TimeInterval(tokens.expiresIn)))
        return tokens.accessToken
    }

    /// The error for a refusal: waits stay waits, the server's own failures read as unavailability.
    static func failure(_ response: HTTPExchange.Response, code: String, message: String) -> SesameError {
        switch response.status {
        case 429: .rateLimited(retryAfter: SesameAPI.retryAfter(of: response) ?? .seconds(1))
        case 500...: .network(underlying: "Sesame answered \(response.status) (\(code))")
        default: .server(code: code, message: message)
        }
    }
}

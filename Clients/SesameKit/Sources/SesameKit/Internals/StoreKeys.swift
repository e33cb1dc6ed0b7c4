import Foundation

/// What SesameKit keeps in the `SecureStore`.
enum StoreKeys {
    static let keyID = "sesame.appAttestKeyID"
    static let refreshToken = "sesame.refreshToken"
    /// The App Attest key's device-side failures in a row (`TokenSession.keyFailuresBeforeNewKey`).
    static let keyFailures = "sesame.appAttestKeyFailures"
    /// A random id of this install, which places it in the app's attestation ramp.
    static let installID = "sesame.installID"
    static func config(version: String, scope: [String]) -> String {
        "sesame.config." + version + (scope.isEmpty ? "" : "?" + scope.sorted().joined(separator: ","))
    }
    /// The saved configs' keys (a JSON array), for a purge to find them all.
    static let configIndex = "sesame.configIndex"
    /// The kill switches met and not yet lifted: app version → the reason Sesame gave (a JSON object).
    static let killSwitches = "sesame.killSwitches"

    /// Removes every item SesameKit keeps (a reinstall's first use).
    static func removeAll(from store: any SecureStore) throws {
        if let index = try store.data(for: configIndex), let keys = try? JSONDecoder().decode([String].self, from: index) {
            for key in keys { try store.remove(key) }
        }
        for key in [keyID, refreshToken, keyFailures, configIndex, killSwitches, installID] { try store.remove(key) }
    }
}

extension SecureStore {
    func string(for key: String) throws -> String? {
        try data(for: key).map { String(decoding: $0, as: UTF8.self) }
    }
}

/// How config documents are stored: their bodies are sealed with the envelope encryption, bound to
/// the app and pattern they belong to, so a ciphertext moved to another row does not open.
public enum ConfigDocument {
    /// The associated data of a config body of `appID` under `pattern`.
    public static func sealingContext(appID: String, pattern: String) -> String {
        "config_revisions.body:\(appID):\(pattern)"
    }
}

/// How log lines are written: one JSON object per line (for collectors) or readable text.
public enum LogFormat: String, Sendable, CaseIterable {
    case json
    case text
}

import Logging

/// Process-wide logging set-up for Sesame executables.
public enum SesameLogging {
    /// Bootstraps swift-log once per process: JSON lines or text, at `level`.
    ///
    /// Call it only from an executable's entry point; tests keep swift-log's default handler.
    public static func bootstrap(json: Bool, level: Logger.Level) {
        LoggingSystem.bootstrap { label in
            if json {
                return JSONLogHandler(label: label, logLevel: level)
            }
            var handler = StreamLogHandler.standardOutput(label: label)
            handler.logLevel = level
            return handler
        }
    }
}

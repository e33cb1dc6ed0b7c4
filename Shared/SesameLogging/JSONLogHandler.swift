import Foundation
import Logging

/// A `LogHandler` that writes one JSON object per line to standard output, for log collectors.
///
/// Each line carries `time`, `level`, `logger`, `message` and the merged metadata (including the
/// request id Hummingbird attaches as `hb.request.id`). Values are written as given: callers must
/// never put secrets in messages or metadata.
public struct JSONLogHandler: LogHandler {
    /// The logger's label, written as `logger`.
    public let label: String
    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let sink: @Sendable (String) -> Void

    /// Creates a handler for `label` that writes lines to `sink` (standard output by default).
    public init(
        label: String,
        logLevel: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        sink: @escaping @Sendable (String) -> Void = JSONLogHandler.writeToStandardOutput
    ) {
        self.label = label
        self.logLevel = logLevel
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        if let error = event.error { merged["error"] = .string(String(describing: error)) }

        var line = "{\"time\":"
        JSONText.appendString(Self.timestamp(), to: &line)
        line += ",\"level\":"
        JSONText.appendString(event.level.rawValue, to: &line)
        line += ",\"logger\":"
        JSONText.appendString(label, to: &line)
        line += ",\"message\":"
        JSONText.appendString(event.message.description, to: &line)
        for key in merged.keys.sorted() where !["time", "level", "logger", "message"].contains(key) {
            line += ","
            JSONText.appendString(key, to: &line)
            line += ":"
            JSONText.appendValue(merged[key]!, to: &line)
        }
        line += "}\n"
        sink(line)
    }

    /// Writes `line` with one `write(2)`, so concurrent lines never interleave.
    @Sendable public static func writeToStandardOutput(_ line: String) {
        var bytes = Array(line.utf8)
        bytes.withUnsafeMutableBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(STDOUT_FILENO, buffer.baseAddress! + offset, buffer.count - offset)
                if written <= 0 { return }
                offset += written
            }
        }
    }

    private static func timestamp() -> String {
        Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }
}

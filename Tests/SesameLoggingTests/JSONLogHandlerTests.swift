import Foundation
import Logging
import Synchronization
import Testing

@testable import SesameLogging

@Suite("JSON log lines")
struct JSONLogHandlerTests {
    final class Lines: Sendable {
        let captured = Mutex<[String]>([])
        func append(_ line: String) { captured.withLock { $0.append(line) } }
        var all: [String] { captured.withLock { $0 } }
    }

    @Test("each entry is one line of valid JSON with level, logger, message and metadata, even with hostile text")
    func oneObjectPerLine() throws {
        let lines = Lines()
        var logger = Logger(label: "sesame-auth") { label in
            JSONLogHandler(label: label, logLevel: .debug, sink: { lines.append($0) })
        }
        logger[metadataKey: "hb.request.id"] = "abc123"
        logger.info(
            "quote \" backslash \\ newline \n tab \t bell \u{07}",
            metadata: ["http.status": "200", "nested": ["a": "1"], "list": ["x", "y"]]
        )
        logger.trace("below the level: not written")

        #expect(lines.all.count == 1)
        let line = try #require(lines.all.first)
        #expect(line.hasSuffix("\n"))
        #expect(line.dropLast().contains("\n") == false)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["level"] as? String == "info")
        #expect(object["logger"] as? String == "sesame-auth")
        #expect(object["message"] as? String == "quote \" backslash \\ newline \n tab \t bell \u{07}")
        #expect(object["hb.request.id"] as? String == "abc123")
        #expect(object["http.status"] as? String == "200")
        #expect((object["nested"] as? [String: String])?["a"] == "1")
        #expect(object["list"] as? [String] == ["x", "y"])
        #expect((object["time"] as? String)?.isEmpty == false)
    }

    @Test("metadata cannot overwrite the standard fields")
    func reservedKeys() throws {
        let lines = Lines()
        let logger = Logger(label: "l") { JSONLogHandler(label: $0, sink: { lines.append($0) }) }
        logger.warning("real", metadata: ["level": "forged", "message": "forged"])
        let object = try #require(try JSONSerialization.jsonObject(with: Data(lines.all[0].utf8)) as? [String: Any])
        #expect(object["level"] as? String == "warning")
        #expect(object["message"] as? String == "real")
    }
}

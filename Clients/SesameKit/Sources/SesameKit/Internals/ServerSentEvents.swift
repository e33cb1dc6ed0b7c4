import Foundation

/// One server-sent event (the fields SesameKit reads). `package`: the server's tests and
/// benchmarks read delivery's streams with the parser the app uses.
package struct ServerSentEvent: Sendable, Equatable {
    package var event = "message"
    package var data = ""
    package var id: String?

    package init(event: String = "message", data: String = "", id: String? = nil) {
        (self.event, self.data, self.id) = (event, data, id)
    }
}

/// Cuts a `text/event-stream` into events, as the HTML standard's parsing rules say: lines end at
/// LF (a CR before it is dropped), a blank line dispatches, `:` starts a comment, `data` lines join
/// with LF, an event with no data is not dispatched.
package struct ServerSentEventParser {
    private var pending = Data()
    private var event = ServerSentEvent()
    private var hasData = false

    /// Feeds `chunk`; returns the events it completed.
    package init() {}

    package mutating func feed(_ chunk: Data) -> [ServerSentEvent] {
        pending.append(chunk)
        var events: [ServerSentEvent] = []
        while let newline = pending.firstIndex(of: 0x0A) {
            var line = pending[pending.startIndex..<newline]
            if line.last == 0x0D { line = line.dropLast() }
            pending = Data(pending[pending.index(after: newline)...])
            if let dispatched = take(String(decoding: line, as: UTF8.self)) { events.append(dispatched) }
        }
        return events
    }

    private mutating func take(_ line: String) -> ServerSentEvent? {
        if line.isEmpty {
            defer { (event, hasData) = (ServerSentEvent(), false) }
            return hasData ? event : nil
        }
        if line.hasPrefix(":") { return nil }
        let field: Substring
        var value: Substring
        if let colon = line.firstIndex(of: ":") {
            field = line[..<colon]
            value = line[line.index(after: colon)...]
            if value.first == " " { value = value.dropFirst() }
        } else {
            (field, value) = (line[...], "")
        }
        switch field {
        case "event": event.event = String(value)
        case "data":
            event.data += (hasData ? "\n" : "") + value
            hasData = true
        case "id" where !value.contains("\0"): event.id = String(value)
        default: break
        }
        return nil
    }
}

import Foundation
import Testing

@testable import SesameKit

@Suite("Reading a config: defaults, Codable, and server-sent events")
struct ConfigReadingTests {
    let config = SesameConfig(
        values: [
            "payments": .object(["stripeKey": .string("sk_live_1"), "retries": .number(3)]),
            "features": .object(["checkout": .bool(true)]),
        ], isStale: false, source: .network, revision: 4, matchedPattern: "*")

    struct Payments: Decodable, Equatable {
        let stripeKey: String
        let retries: Int
    }

    @Test("typed accessors fall back to their defaults when a value is absent or of another type")
    func defaults() {
        #expect(config.bool("features.checkout", default: false) == true)
        #expect(config.bool("features.missing", default: true) == true)
        #expect(config.string("payments.retries", default: "none") == "none")
        #expect(config.int("payments.retries", default: 0) == 3)
        #expect(config.double("payments.stripeKey", default: 1.5) == 1.5)
    }

    @Test("whole numbers stay exact: an integer past 2^53 reads back as sent, and a number reads as either")
    func integers() throws {
        let body = Data(#"{"order": {"id": 9007199254740993, "cents": 1999, "rate": 0.25, "whole": 3.0}}"#.utf8)
        let values = try JSONDecoder().decode([String: SesameConfig.Value].self, from: body)
        let config = SesameConfig(values: values, isStale: false, source: .network, revision: 1, matchedPattern: "*")
        #expect(config.value("order.id") == .integer(9_007_199_254_740_993))
        #expect(config.int("order.id") == 9_007_199_254_740_993, "a double would have read 9007199254740992")
        #expect(config.int("order.cents") == 1999)
        #expect(config.double("order.cents") == 1999)
        #expect(config.double("order.rate") == 0.25)
        #expect(config.int("order.rate") == nil)
        #expect(config.int("order.whole") == 3)
        struct Order: Decodable { let id: Int64 }
        #expect(try config.decode(Order.self, at: "order").id == 9_007_199_254_740_993)
    }

    @Test("decode reads the whole config or the part at a path, and says what is missing")
    func decode() throws {
        #expect(try config.decode(Payments.self, at: "payments") == Payments(stripeKey: "sk_live_1", retries: 3))
        struct Whole: Decodable { let payments: Payments }
        #expect(try config.decode(Whole.self).payments.retries == 3)
        #expect(throws: SesameConfigError.missing(path: "nope")) { try config.decode(Payments.self, at: "nope") }
        #expect(throws: DecodingError.self) { try config.decode(Payments.self, at: "features") }
    }

    @Test("server-sent events: split across chunks, CRLF, comments, multi-line data, ids; no data, no event")
    func serverSentEvents() {
        var parser = ServerSentEventParser()
        #expect(parser.feed(Data("retry: 3000\n\n: heartbeat\n\nid: \"e1\"\nevent: con".utf8)).isEmpty)
        let first = parser.feed(Data("fig\r\ndata: {\"etag\":\r\ndata: 1}\r\n\r\nevent: token_expired\n".utf8))
        #expect(first == [ServerSentEvent(event: "config", data: "{\"etag\":\n1}", id: "\"e1\"")])
        #expect(parser.feed(Data("data: {}\n".utf8)).isEmpty)
        let second = parser.feed(Data("\n".utf8))
        #expect(second == [ServerSentEvent(event: "token_expired", data: "{}", id: nil)])
        #expect(parser.feed(Data("event: ignored\n\n".utf8)).isEmpty)
    }

    @Test("reset forgets the key, the tokens and the saved configs: the next fetch attests a new key")
    func reset() async throws {
        let harness = Harness()
        let client = harness.client()
        _ = try await client.fetchConfig()
        let keyID = try #require(try harness.store.string(for: StoreKeys.keyID))
        try await client.reset()
        #expect(try harness.store.string(for: StoreKeys.keyID) == nil && harness.store.string(for: StoreKeys.refreshToken) == nil)
        #expect(try harness.store.data(for: StoreKeys.config(version: "2.1.3", scope: [])) == nil)
        _ = try await client.fetchConfig()
        #expect(harness.sesame.count("/v1/auth/attest") == 2)
        #expect(try harness.store.string(for: StoreKeys.keyID) != keyID)
    }
}

import Logging
import SesameEventBus
import SesameKafka
import SesameTestSupport
import SesameTokens
import Testing

@testable import AuthService

/// Auth learns a rotation from its event, and also when the event never came: a broker that lost
/// its log can lose an acknowledged event (docs/upstream/tansu-acknowledges-unknown-topic.md),
/// and then the consumer's catch-up is the only signal before the maintenance round.
@Suite("Auth's signing key watcher", .timeLimit(.minutes(2)))
struct SigningKeyWatcherTests {
    let logger = Logger(label: "test")

    @Test("a rotation whose event was lost is loaded at the consumer's next catch-up, not before")
    func lostRotationEventCaughtUp() async throws {
        try await AuthHarness.run { harness in
            try await harness.withTokenStore { store in
                let tokens = TokenAuthority(store: store, signs: true, logger: logger)
                let before = try #require(try await tokens.signingKeyID())
                // The rotation's event stays in the outbox: no relay runs here, as if the broker lost it.
                let rotation = try await store.rotate(activatingAfter: .zero, verifyRetiredFor: .seconds(7200))
                let (messages, _) = AsyncStream.makeStream(of: KafkaMessage.self)
                let (catchUps, catchUp) = AsyncStream.makeStream(of: Void.self)
                let watcher = SigningKeyWatcher(
                    events: EventStream(messages: messages, logger: logger), catchUps: catchUps, tokens: tokens, logger: logger)
                try await withRunningServices([watcher]) {
                    try await Task.sleep(for: .milliseconds(300))
                    #expect(try await tokens.signingKeyID() == before, "reloaded with nothing asking")
                    catchUp.yield()
                    try await eventually(timeout: .seconds(5), "the new key after the catch-up") {
                        try await tokens.signingKeyID() == rotation.kid
                    }
                }
            }
        }
    }
}

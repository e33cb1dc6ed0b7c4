import Logging
import ServiceLifecycle
import SesameEventBus
import SesameEvents
import SesameStorage
import SesameTokens

/// Reloads the signing keys as soon as `sesame.revocations` says another instance (or the
/// operator's command) rotated them, instead of at the next maintenance round; and each time the
/// consumer asks for a catch-up (assigned, back after the broker was away, or behind), because an
/// event it did not read may have been a rotation.
///
/// Revoked attested keys and emergency revocations need nothing here: refresh reads them from
/// PostgreSQL, which is where the events come from, so they apply even while Kafka is down.
struct SigningKeyWatcher: Service {
    let events: EventStream
    /// The consumer's catch-up requests (`KafkaBroadcastConsumer.reconnections`).
    let catchUps: AsyncStream<Void>
    let tokens: TokenAuthority
    let logger: Logger

    func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                for await envelope in events.cancelOnGracefulShutdown() {
                    guard case .signingKeyRotated(let rotated) = envelope.event else { continue }
                    await reload(because: "reloaded signing keys after a rotation", metadata: ["kid": "\(rotated.kid)"])
                }
            }
            group.addTask {
                // A broker that lost its log (see docs/upstream/tansu-acknowledges-unknown-topic.md)
                // may have taken a rotation's event with it: PostgreSQL has the key either way.
                for await _ in catchUps.cancelOnGracefulShutdown() {
                    await reload(because: "reloaded signing keys: the event consumer caught up", metadata: [:])
                }
            }
            await group.waitForAll()
        }
    }

    private func reload(because message: Logger.Message, metadata: Logger.Metadata) async {
        do {
            try await withTimeout(.seconds(10)) { try await tokens.reload() }
            logger.info(message, metadata: metadata)
        } catch {
            // The maintenance round retries within a minute.
            logger.warning("could not reload signing keys", metadata: ["error": "\(String(reflecting: error))"])
        }
    }
}

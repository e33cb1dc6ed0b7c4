import Logging
import ServiceLifecycle
import SesameEventBus
import SesameEvents
import SesameStorage
import SesameTokens

/// Reloads the signing keys as soon as `sesame.revocations` says another instance (or the
/// operator's command) rotated them, instead of at the next maintenance round.
///
/// Revoked attested keys and emergency revocations need nothing here: refresh reads them from
/// PostgreSQL, which is where the events come from, so they apply even while Kafka is down.
struct SigningKeyWatcher: Service {
    let events: EventStream
    let tokens: TokenAuthority
    let logger: Logger

    func run() async throws {
        for await envelope in events.cancelOnGracefulShutdown() {
            guard case .signingKeyRotated(let rotated) = envelope.event else { continue }
            do {
                try await withTimeout(.seconds(10)) { try await tokens.reload() }
                logger.info("reloaded signing keys after a rotation", metadata: ["kid": "\(rotated.kid)"])
            } catch {
                // The maintenance round retries within a minute.
                logger.warning("could not reload signing keys after a rotation", metadata: ["error": "\(String(reflecting: error))"])
            }
        }
    }
}

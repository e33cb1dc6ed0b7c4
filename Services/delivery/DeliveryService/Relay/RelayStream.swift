import AsyncAlgorithms
import AsyncHTTPClient
import Foundation
import Hummingbird
import NIOCore
import SesameDomain
import SesameHTTP
import SesameTokens

/// The upstream's answer body on its way to the caller: each piece written as it arrives (one piece
/// held at a time: the upstream is read no faster than the caller takes it), within the relay's
/// `maxResponseBytes` and its call's deadline, and only while the caller and the relay still stand
/// (checked every `RelayRoutes.standingInterval`). A stream that must stop mid-way ends an event
/// stream with a `sesame-relay-ended` event naming why; any other body is cut (the connection is
/// closed, so a truncated body never looks whole). A write the caller stopped reading is ended too:
/// `writeGrace` past the deadline the connection is closed, which fails the write under way, so a
/// caller cannot hold the call's slot (and the upstream's connection) by not reading.
struct RelayStream: Sendable {
    /// How long past its deadline a call may still be writing (its end event) before its
    /// connection is closed.
    static let writeGrace: Duration = .seconds(1)

    let answer: HTTPClientResponse
    let claims: AccessTokenClaims
    let relay: ServedRelay
    let gate: AccessGate
    let deadline: ContinuousClock.Instant
    let isEventStream: Bool
    let slot: RelayCallSlots.Slot
    let connection: any Channel

    /// Why a stream stopped before the upstream finished.
    struct Stopped: Error {
        let error: APIError
    }

    func write(to writer: inout any ResponseBodyWriter) async throws {
        defer { slot.release() }
        try await withThrowingTaskGroup(of: Void.self) { ending in
            ending.addTask { [connection, deadline] in
                try await Task.sleep(until: deadline + Self.writeGrace)
                connection.close(promise: nil)
            }
            defer { ending.cancelAll() }
            try await writeBody(to: &writer)
        }
    }

    private func writeBody(to writer: inout any ResponseBodyWriter) async throws {
        let appID = claims.appID
        let pieces = AsyncThrowingChannel<ByteBuffer, any Error>()
        var carried = 0
        defer { RelayMetrics.bytes(carried, appID: appID, relay: relay.name, up: false) }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await pump(into: pieces) }
                group.addTask { await watch(pieces) }
                defer { group.cancelAll() }
                for try await piece in pieces {
                    carried += piece.readableBytes
                    try await writer.write(piece)
                }
            }
            try await writer.finish(nil)
        } catch let stopped as Stopped {
            RelayMetrics.request(appID: appID, relay: relay.name, outcome: "stopped_" + stopped.error.code)
            guard isEventStream else { throw stopped }
            try await writer.write(ByteBuffer(bytes: Self.endEvent(stopped.error)))
            try await writer.finish(nil)
        }
    }

    /// Reads the upstream's body into `pieces`, within `maxResponseBytes`.
    private func pump(into pieces: AsyncThrowingChannel<ByteBuffer, any Error>) async {
        let limit = relay.rules.maxResponseBytes
        var total = 0
        do {
            for try await piece in answer.body {
                total += piece.readableBytes
                guard total <= limit else { throw Stopped(error: RelayErrors.responseTooLarge(limit)) }
                await pieces.send(piece)
            }
            pieces.finish()
        } catch is CancellationError {
            pieces.finish()
        } catch let stopped as Stopped {
            pieces.fail(stopped)
        } catch {
            pieces.fail(Stopped(error: RelayErrors.upstreamFailed))
        }
    }

    /// Stops `pieces` at the deadline, or when the caller or the relay no longer stands.
    private func watch(_ pieces: AsyncThrowingChannel<ByteBuffer, any Error>) async {
        while !Task.isCancelled {
            let next = min(deadline, ContinuousClock.now + RelayRoutes.standingInterval)
            do { try await Task.sleep(until: next) } catch { return }
            if ContinuousClock.now >= deadline {
                pieces.fail(Stopped(error: RelayErrors.upstreamTimeout(relay.rules.timeoutSeconds)))
                return
            }
            if let refusal = refusal() {
                pieces.fail(Stopped(error: refusal))
                return
            }
        }
    }

    /// Why the caller may no longer use the relay, if it may not: its standing (revoked install,
    /// closed tier), the app's kill switches and revocations, the relay removed or moved to another
    /// upstream, or its least tier raised above the caller's. (A new quota or limit applies to the
    /// next call, not to a stream under way.)
    func refusal() -> APIError? {
        do {
            let caller = try gate.standing(of: claims)
            guard let current = caller.state.relays[relay.name], current.rules.upstream == relay.rules.upstream else {
                return caller.state.unusableRelays[relay.name] == nil ? RelayErrors.notFound : RelayErrors.unusable
            }
            _ = try gate.admit(caller, tier: current.rules.leastTier, what: RelayRoutes.tierRefusalSubject)
            return nil
        } catch let error as APIError {
            return error
        } catch {
            return RelayErrors.upstreamFailed
        }
    }

    /// A server-sent event saying why the stream ended, after a blank line that closes any event the
    /// upstream left unfinished.
    static func endEvent(_ error: APIError) -> [UInt8] {
        let body = (try? JSONEncoder().encode(["error": ["code": error.code, "message": error.message]])) ?? Data("{}".utf8)
        return Array("\n\nevent: sesame-relay-ended\ndata: ".utf8) + Array(body) + Array("\n\n".utf8)
    }
}

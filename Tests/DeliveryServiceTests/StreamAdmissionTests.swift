import Foundation
import HTTPTypes
import JWTKit
import SesameDomain
import SesameHTTP
import Testing

@testable import SesameTokens

@testable import DeliveryService

/// The live-config streams one install, one address or everyone may hold on a replica, counted as
/// each is admitted: a burst of opens at the same instant cannot pass a limit together.
@Suite("Live-config streams: admission limits")
struct StreamAdmissionTests {
    static func claims(subject: String, tier: TrustTier = .attested) -> AccessTokenClaims {
        let now = Date()
        return AccessTokenClaims(
            subject: .init(value: subject), appID: "TEAM.com.example", environment: "production", appVersion: "2.1.3",
            issuedAt: .init(value: now), expiration: .init(value: now.addingTimeInterval(600)), id: .init(value: UUID().uuidString),
            type: AccessTokenClaims.typeValue, audience: .init(value: AccessTokenClaims.audienceValue), tier: tier)
    }

    /// Opens `count` streams at once from as many tasks; returns the subscriptions admitted and the refusals.
    static func burst(
        _ notices: AppChangeNotices, count: Int, opener: @escaping @Sendable (Int) -> AppChangeNotices.Opener
    ) async -> (admitted: [AppChangeNotices.Subscription], refused: [APIError]) {
        await withTaskGroup(of: Result<AppChangeNotices.Subscription, APIError>.self) { group in
            for index in 0..<count {
                group.addTask {
                    do { return .success(try notices.subscribe(opener(index)) { _ in }) } catch let error as APIError { return .failure(error) } catch {
                        return .failure(.internalError)
                    }
                }
            }
            var outcome: ([AppChangeNotices.Subscription], [APIError]) = ([], [])
            for await result in group {
                switch result {
                case .success(let subscription): outcome.0.append(subscription)
                case .failure(let error): outcome.1.append(error)
                }
            }
            return outcome
        }
    }

    @Test("300 opens at once with one token: exactly the install's 8 are admitted, the rest 429 too_many_streams; a closed one frees its place")
    func burstOfOneInstall() async throws {
        let notices = AppChangeNotices()
        let claims = Self.claims(subject: "device-1")
        let (admitted, refused) = await Self.burst(notices, count: 300) { _ in .init(claims: claims, address: "198.51.100.7") }
        #expect(admitted.count == 8 && notices.count == 8)
        #expect(refused.count == 292 && refused.allSatisfy { $0.status == .tooManyRequests && $0.code == "too_many_streams" })
        #expect(refused.first?.headers[.retryAfter] == "12", "a closed stream is noticed within a tick (10 s)")
        notices.cancel(admitted[0])
        #expect((try? notices.subscribe(.init(claims: claims, address: "198.51.100.7")) { _ in }) != nil)
    }

    @Test("an unattested token's streams count against its address, whatever subject each exchange gave it")
    func unattestedByAddress() async throws {
        let notices = AppChangeNotices()
        let (admitted, refused) = await Self.burst(notices, count: 20) { index in
            .init(claims: Self.claims(subject: "unattested-\(index)", tier: .unattested), address: "203.0.113.9")
        }
        #expect(admitted.count == 8 && refused.count == 12)
        // Another address has its own eight.
        #expect((try? notices.subscribe(.init(claims: Self.claims(subject: "x", tier: .unattested), address: "203.0.113.10")) { _ in }) != nil)
    }

    @Test("one address (an IPv6 client's /64 key) holds at most perAddress streams across installs; another address is not held back")
    func perAddress() async throws {
        let notices = AppChangeNotices(limits: .init(perInstall: 8, perAddress: 20, perReplica: 1_000))
        let (admitted, refused) = await Self.burst(notices, count: 100) { index in
            .init(claims: Self.claims(subject: "device-\(index)"), address: "2001:db8:1:2::/64")
        }
        #expect(admitted.count == 20 && refused.count == 80)
        #expect(refused.first?.message.contains("address") == true)
        #expect((try? notices.subscribe(.init(claims: Self.claims(subject: "device-x"), address: "2001:db8:1:3::/64")) { _ in }) != nil)
    }

    @Test("past the replica's limit every open is refused 503 too_many_streams with Retry-After, and admitted again once one closes")
    func perReplica() async throws {
        let notices = AppChangeNotices(limits: .init(perInstall: 8, perAddress: 256, perReplica: 50))
        let (admitted, refused) = await Self.burst(notices, count: 200) { index in
            .init(claims: Self.claims(subject: "device-\(index)"), address: "192.0.2.\(index % 200)")
        }
        #expect(admitted.count == 50 && refused.count == 150)
        #expect(refused.allSatisfy { $0.status == .serviceUnavailable && $0.code == "too_many_streams" && $0.headers[.retryAfter] != nil })
        for subscription in admitted { notices.cancel(subscription) }
        #expect(notices.count == 0)
        #expect((try? notices.subscribe(.init(claims: Self.claims(subject: "late"), address: "192.0.2.1")) { _ in }) != nil)
    }

    @Test("a router stream's notices released unread (its response never written) give the place back")
    func releasedNotices() async throws {
        let notices = AppChangeNotices(limits: .init(perInstall: 1, perAddress: 256, perReplica: 1_000))
        let opener = AppChangeNotices.Opener(claims: Self.claims(subject: "device-1"), address: "198.51.100.7")
        do {
            let (_, stream) = try notices.notices(for: opener)
            _ = stream
            #expect(notices.count == 1)
        }
        #expect(notices.count == 0, "the released stream still holds its place")
        #expect((try? notices.notices(for: opener)) != nil)
    }
}

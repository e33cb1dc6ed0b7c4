import Crypto
import Foundation
import SesameKitTesting
import Testing

@testable import SesameKit

@Suite("SesameClient.blob: ranged, resumed, verified")
struct BlobTests {
    static let bytes = Data((0..<(2 * SesameClient.blobRangeBytes + 12_345)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    func ranges(_ harness: Harness) -> [String] {
        harness.sesame.with { $0.requests.filter { $0.url.path.hasSuffix("/content") }.compactMap { $0.headers["range"] } }
    }

    @Test("downloaded in ranges and checked; a range lost in transit is asked for again from where it stopped")
    func resumed() async throws {
        let harness = Harness()
        harness.sesame.with { state in
            state.blob = Self.bytes
            state.failingRangeRequests = [1]
        }
        let data = try await harness.client().blob("model.bin")
        #expect(data == Self.bytes)
        let size = SesameClient.blobRangeBytes
        #expect(ranges(harness) == [
            "bytes=0-\(size - 1)", "bytes=\(size)-\(2 * size - 1)", "bytes=\(size)-\(2 * size - 1)", "bytes=\(2 * size)-\(Self.bytes.count - 1)",
        ])
        #expect(harness.device.sleeps.count == 1)
    }

    @Test("bytes that are not the announced ones are refused")
    func mismatch() async throws {
        let harness = Harness()
        harness.sesame.with { state in
            state.blob = Self.bytes
            state.announcedSHA256 = String(repeating: "0", count: 64)
        }
        await #expect(throws: SesameError.server(code: "blob_mismatch", message: "The bytes of blob 'model.bin' are not the ones Sesame announced; nothing was kept.")) {
            try await harness.client().blob("model.bin")
        }
    }

    @Test("an expired link is renewed and the download goes on")
    func renewedLink() async throws {
        let harness = Harness()
        harness.sesame.with { state in
            state.blob = Self.bytes
            state.linksValidFrom = 2
        }
        #expect(try await harness.client().blob("model.bin") == Self.bytes)
        #expect(harness.sesame.with { $0.linksIssued } == 2)
    }

    @Test("a blob that is not there; a network that keeps failing")
    func failures() async throws {
        let harness = Harness()
        harness.sesame.with { $0.blob = Self.bytes }
        await #expect { try await harness.client().blob("missing.bin") } throws: { error in
            guard case .server(let code, _) = error as? SesameError else { return false }
            return code == "blob_not_found"
        }
        harness.sesame.with { $0.failingRangeRequests = Set(0..<10) }
        await #expect { try await harness.client().blob("model.bin") } throws: { error in
            if case .network = error as? SesameError { return true }
            return false
        }
        #expect(ranges(harness).count == SesameClient.blobRetries)
    }
}

@Suite("SesameClient user data")
struct UserDataTests {
    @Test("nothing stored is nil; a put creates, a put from a stale version is a conflict, the current one wins")
    func roundTrip() async throws {
        let harness = Harness()
        let client = harness.client()
        let user = SesameUser.unverified(id: "user-1")
        #expect(try await client.userData(for: user) == nil)
        let created = try await client.putUserData(["theme": .string("dark")], for: user, replacing: nil)
        let stored = try #require(try await client.userData(for: user))
        #expect(stored.values == ["theme": .string("dark")] && stored.version == created)
        let updated = try await client.putUserData(["theme": .string("light")], for: user, replacing: stored.version)
        await #expect { try await client.putUserData(["theme": .string("blue")], for: user, replacing: stored.version) } throws: { error in
            guard case .server(let code, _) = error as? SesameError else { return false }
            return code == "version_conflict"
        }
        #expect(try await client.userData(for: user)?.version == updated)
        let last = harness.sesame.with { $0.requests.last { $0.method == "PUT" } }
        #expect(last?.headers["x-sesame-user-id"] == "user-1")
    }
}

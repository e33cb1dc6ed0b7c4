import AdminService
import Crypto
import Foundation
import Hummingbird
import HummingbirdTesting
import PostgresNIO
import SesameServer
import SesameTestSupport
import Testing

@Suite("Delivery: blob bytes sealed at rest", .timeLimit(.minutes(2)))
struct BlobAtRestTests {
    static let appID = "\(DeliveryHarness.teamID).\(DeliveryHarness.bundleID)"

    /// A fresh link to `blobKey`, or the status that refused it.
    static func link(_ blobKey: String, harness: DeliveryHarness, token: String) async throws -> (HTTPResponse.Status, String?) {
        let reply = try await harness.blobLink(blobKey, token: token)
        return (reply.status, reply.json["url"] as? String)
    }

    /// The bytes a GET of `url` delivered, or nil when the response failed or was cut short.
    static func download(_ url: String, range: String? = nil, from delivery: any TestClientProtocol) async -> [UInt8]? {
        var headers: HTTPFields = [:]
        if let range { headers[.range] = range }
        return try? await delivery.execute(uri: url, method: .get, headers: headers) { response in
            response.status == .ok || response.status == .partialContent ? Array(response.body.readableBytesView) : nil
        }
    }

    @Test("a chunk moved to another place is never served as that place's bytes; the chunks it does not touch still are")
    func movedChunkIsRefused() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let bytes = (0..<(3 * 1024 * 1024 + 17)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
            let put = try await harness.admin.execute(
                uri: "/v1/admin/blob/model.bin", method: .put,
                headers: [.authorization: "Bearer \(harness.key)", .contentType: "application/octet-stream"], body: ByteBuffer(bytes: bytes)
            ) { $0.status }
            #expect(put == .ok)
            let url = try #require(try await Self.link("model.bin", harness: harness, token: token).1)
            #expect(await Self.download(url, from: harness.deliveries[0]) == bytes)

            // Swap chunks 0 and 1 in the database.
            for (from, to) in [(0, 99), (1, 0), (99, 1)] {
                try await harness.database.query(
                    "UPDATE blob_chunks SET chunk_index = \(to) WHERE app_id = \(Self.appID) AND blob_key = 'model.bin' AND chunk_index = \(from)")
            }
            // Chunk 3 is untouched. (Asked first: a failed response closes the test client's connection.)
            let tail = await Self.download(url, range: "bytes=3145728-3145744", from: harness.deliveries[0])
            let head = await Self.download(url, range: "bytes=0-9", from: harness.deliveries[0])
            #expect(head == nil || head != Array(bytes[0...9]) && head != Array(bytes[1_048_576...1_048_585]))
            #expect(await Self.download(url, from: harness.deliveries[1]) == nil)
            #expect(tail == Array(bytes[3_145_728...]))
        }
    }

    @Test("a blob an earlier version stored in clear is sealed when admin starts, and served the same")
    func clearBlobIsSealedAtStart() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let bytes = (0..<(1024 * 1024 + 5)).map { UInt8(truncatingIfNeeded: $0 &* 5) }
            try await harness.database.query(
                """
                INSERT INTO blobs (app_id, blob_key, content_type, size_bytes, sha256, data)
                VALUES (\(Self.appID), 'legacy.bin', 'application/octet-stream', \(Int64(bytes.count)), \(Data(SHA256.hash(data: bytes))),
                    \(Data(bytes)))
                """)
            // Until admin seals it, delivery does not serve it.
            #expect(try await Self.link("legacy.bin", harness: harness, token: token).0 == .notFound)

            try await AdminService.buildApplication(configuration: harness.configuration).test(.live) { _ in
                try await eventually("the restarted admin sealed it") {
                    try await Self.link("legacy.bin", harness: harness, token: token).0 == .ok
                }
            }
            let url = try #require(try await Self.link("legacy.bin", harness: harness, token: token).1)
            #expect(await Self.download(url, from: harness.deliveries[1]) == bytes)
            let rows = try await harness.database.query(
                "SELECT count(*) FILTER (WHERE data IS NOT NULL), (SELECT count(*) FROM blob_chunks WHERE blob_key = 'legacy.bin') FROM blobs")
            for try await (clear, chunks) in rows.decode((Int, Int).self) {
                #expect(clear == 0)
                #expect(chunks == 2)
            }
        }
    }
}

import Foundation
import PostgresNIO
import SesameTestSupport
import Testing

@Suite("Delivery: per-user data", .timeLimit(.minutes(2)))
struct UserDataTests {
    @Test("create with If-Match \"0\", read with its ETag, conditional updates, one winner among concurrent writers")
    func optimisticConcurrency() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            let user = "_icloud_record_0123456789abcdef"
            #expect(try await harness.userData(.get, userID: user, token: token).status == .notFound)
            let created = try await harness.userData(.put, userID: user, token: token, body: #"{"score":1,"secret":"plain-marker"}"#, ifMatch: "\"0\"")
            #expect(created.status == .ok)
            #expect(created.etag == "\"1\"")
            #expect(try await harness.userData(.put, userID: user, token: token, body: #"{"score":9}"#, ifMatch: "\"0\"").status == .preconditionFailed)

            let read = try await harness.userData(.get, userID: user, token: token)
            #expect(read.body == #"{"score":1,"secret":"plain-marker"}"#)
            #expect(read.etag == "\"1\"")
            #expect(try await harness.userData(.put, userID: user, token: token, body: #"{"score":2}"#, ifMatch: "\"1\"").etag == "\"2\"")

            // Two writers holding version 2: exactly one wins, the other is told to merge.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for score in [3, 4] {
                    group.addTask {
                        Int(try await harness.userData(.put, userID: user, token: token, body: #"{"score":\#(score)}"#, ifMatch: "\"2\"").status.code)
                    }
                }
                var collected: [Int] = []
                for try await status in group { collected.append(status) }
                return collected.sorted()
            }
            #expect(statuses == [200, 412])

            // Other users are separate; the raw id and the plaintext are not stored.
            #expect(try await harness.userData(.get, userID: "someone-else", token: token).status == .notFound)
            let rows = try await harness.database.query("SELECT user_hash, body FROM user_data")
            for try await (hash, body) in rows.decode((Data, Data).self) {
                #expect(!String(decoding: hash, as: UTF8.self).contains("icloud"))
                #expect(!String(decoding: body, as: UTF8.self).contains("plain-marker") && !String(decoding: body, as: UTF8.self).contains("score"))
            }
        }
    }

    @Test("malformed requests: no user id, not a JSON object, oversize, bad If-Match, no token")
    func refusals() async throws {
        try await DeliveryHarness.run { harness in
            let token = try await harness.app.attest(with: harness.auth).accessToken
            #expect(try await harness.userData(.get, userID: nil, token: token).status == .badRequest)
            #expect(try await harness.userData(.put, userID: "u", token: token, body: "[1,2]").status == .badRequest)
            #expect(try await harness.userData(.put, userID: "u", token: token, body: "not json").status == .badRequest)
            #expect(try await harness.userData(.put, userID: "u", token: token, body: #"{"a":1}"#, ifMatch: "W/\"x\"").status == .badRequest)
            let large = #"{"a":""# + String(repeating: "x", count: 300 * 1024) + #""}"#
            #expect(try await harness.userData(.put, userID: "u", token: token, body: large).status == .contentTooLarge)
            #expect(try await harness.userData(.get, userID: "u", token: "garbage").status == .unauthorized)
        }
    }
}

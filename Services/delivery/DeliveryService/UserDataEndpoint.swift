import Foundation
import HTTPTypes
import Hummingbird
import SesameDomain
import SesameHTTP

/// `GET` and `PUT /v1/user/data?user_id=…`: a JSON document per user of the app, with `ETag` and
/// `If-Match` so concurrent writers do not overwrite each other (412 instead).
struct UserDataEndpoint: Sendable {
    let store: UserDataStore
    let tokens: AccessTokenVerifier
    static let maxBodyBytes = 256 * 1024

    func get(_ request: Request) async throws -> Response {
        let appID = try await tokens.appID(of: request)
        guard let stored = try await store.read(appID: appID, userID: try Self.userID(request)) else {
            throw APIError(.notFound, code: "no_user_data", message: "Nothing is stored for this user yet; PUT it with If-Match: \"0\".")
        }
        var headers: HTTPFields = [.eTag: "\"\(stored.version)\"", .contentType: "application/json", .cacheControl: "private, no-cache"]
        if let ifNoneMatch = request.headers[.ifNoneMatch], ConfigEndpoint.matches(ifNoneMatch, "\"\(stored.version)\"") {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: stored.body)))
    }

    func put(_ request: Request) async throws -> Response {
        let appID = try await tokens.appID(of: request)
        let userID = try Self.userID(request)
        let body = try await request.body.collect(upTo: Self.maxBodyBytes)
        guard (try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)))?.objectValue != nil else {
            throw APIError(.badRequest, code: "invalid_request", message: "The body must be a JSON object.")
        }
        var expected: Int64?
        if let ifMatch = request.headers[.ifMatch] {
            let trimmed = ifMatch.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("\""), trimmed.hasSuffix("\""), trimmed.count >= 3, let version = Int64(trimmed.dropFirst().dropLast()),
                version >= 0
            else {
                throw APIError(.badRequest, code: "invalid_request", message: "If-Match must be an ETag from a previous reply, or \"0\" to create.")
            }
            expected = version
        }
        switch try await store.write(appID: appID, userID: userID, body: Array(buffer: body), expectedVersion: expected) {
        case .written(let version):
            return Response(status: .ok, headers: [.eTag: "\"\(version)\"", .contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"version":\#(version)}"#)))
        case .conflict:
            throw APIError(
                .preconditionFailed, code: "version_conflict",
                message: "The data changed since your copy (If-Match); GET it again, merge, and retry.")
        }
    }

    static func userID(_ request: Request) throws -> String {
        guard let userID = request.uri.queryParameters.get("user_id"), (1...256).contains(userID.utf8.count) else {
            throw APIError(.badRequest, code: "invalid_request", message: "\"user_id\" is required (1 to 256 characters).")
        }
        return String(userID)
    }
}

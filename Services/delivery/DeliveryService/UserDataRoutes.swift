import Foundation
import HTTPTypes
import Hummingbird
import NIOFoundationEssentialsCompat
import SesameDomain
import SesameHTTP
import SesameJSON
import SesameTokens

/// `GET` and `PUT /v1/user/data`: a JSON document per user of the app (the user shown as the app's
/// policy requires, see `UserIdentity`), with `ETag` and `If-Match` so concurrent writers do not
/// overwrite each other (412 instead), within the app's document quota.
struct UserDataRoutes: Sendable {
    let store: UserDataStore
    let gate: AccessGate
    let identity: UserIdentity
    static let maxBodyBytes = 256 * 1024

    /// Adds `GET` and `PUT data` to the `v1/user` group.
    func addRoutes(to group: RouterGroup<SesameRequestContext>) {
        group.get("data") { request, context in try await get(request, context: context) }
        group.put("data") { request, context in try await put(request, context: context) }
    }

    func get(_ request: Request, context: SesameRequestContext) async throws -> Response {
        let admitted = try await gate.admit(request, to: .userData, context: context)
        let appID = admitted.claims.appID
        guard let stored = try await store.read(appID: appID, userID: try await identity.userKey(of: request, appID: appID, policy: admitted.state.policy)) else {
            throw APIError(.notFound, code: DeliveryErrorCode.noUserData, message: "Nothing is stored for this user yet; PUT it with If-Match: \"0\".")
        }
        var headers: HTTPFields = [.eTag: "\"\(stored.version)\"", .contentType: "application/json", .cacheControl: "private, no-cache"]
        if let ifNoneMatch = request.headers[.ifNoneMatch], EntityTag.matches(ifNoneMatch: ifNoneMatch, "\"\(stored.version)\"") {
            headers[.contentType] = nil
            return Response(status: .notModified, headers: headers)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: stored.body)))
    }

    func put(_ request: Request, context: SesameRequestContext) async throws -> Response {
        let admitted = try await gate.admit(request, to: .userData, context: context)
        let appID = admitted.claims.appID
        let userID = try await identity.userKey(of: request, appID: appID, policy: admitted.state.policy)
        let body = try await request.body.collect(upTo: Self.maxBodyBytes)
        guard (try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)))?.objectValue != nil else {
            throw APIError.invalidRequest("The body must be a JSON object.")
        }
        var expected: Int64?
        if let ifMatch = request.headers[.ifMatch] {
            let trimmed = ifMatch.trimmingCharacters(in: .whitespaces)
            guard trimmed.hasPrefix("\""), trimmed.hasSuffix("\""), trimmed.count >= 3, let version = Int64(trimmed.dropFirst().dropLast()),
                version >= 0
            else {
                throw APIError.invalidRequest("If-Match must be an ETag from a previous reply, or \"0\" to create.")
            }
            expected = version
        }
        let quota = admitted.state.policy.userDocumentQuota
        switch try await store.write(appID: appID, userID: userID, body: Array(buffer: body), expectedVersion: expected, quota: quota) {
        case .written(let version):
            return Response(status: .ok, headers: [.eTag: "\"\(version)\"", .contentType: "application/json"],
                body: .init(byteBuffer: ByteBuffer(string: #"{"version":\#(version)}"#)))
        case .conflict:
            throw APIError(
                .preconditionFailed, code: DeliveryErrorCode.versionConflict,
                message: "The data changed since your copy (If-Match); GET it again, merge, and retry.")
        case .quotaExceeded:
            throw APIError(
                .forbidden, code: DeliveryErrorCode.userQuotaExceeded,
                message: "The app stores as many user documents as its policy allows (\(quota)); raise userDocumentQuota to add more.")
        }
    }
}

import Foundation

/// Who the signed-in user is, in the form the app's policy (`userIdentity`) asks for.
public enum SesameUser: Sendable, Equatable {
    /// An ID token from the app's identity provider: Sesame verifies it and keys the data by its
    /// issuer and subject (policy `verified`).
    case identityToken(String)
    /// A user id the app vouches for itself (policy `unverified`).
    case unverified(id: String)

    var headers: [String: String] {
        switch self {
        case .identityToken(let token): ["x-sesame-identity-token": token]
        case .unverified(let id): ["x-sesame-user-id": id]
        }
    }
}

/// A user's document, with the version to update it from.
public struct UserDocument: Sendable, Equatable {
    /// The JSON object stored for the user.
    public let values: [String: SesameConfig.Value]
    /// Its version (an ETag): give it to `putUserData` to replace exactly this one.
    public let version: String
}

extension SesameClient {
    /// The document stored for `user`, or nil when nothing is stored yet.
    public func userData(for user: SesameUser) async throws(SesameError) -> UserDocument? {
        let response = try await authorized("GET", "v1/user/data", headers: user.headers)
        switch response.status {
        case 200:
            guard let values = try? JSONDecoder().decode([String: SesameConfig.Value].self, from: response.body),
                let version = response.headers["etag"]
            else { throw .server(code: "invalid_response", message: "The user data reply cannot be read.") }
            return UserDocument(values: values, version: version)
        case 404 where SesameAPI.refusal(of: response).code == "no_user_data":
            return nil
        default:
            throw Self.refused(response)
        }
    }

    /// Stores `values` for `user`, replacing the document at `version` (from `userData(for:)`), or
    /// creating it when `version` is nil. Returns the new version.
    /// - Throws: `.server(code: "version_conflict", …)` when the document changed since `version`
    ///   (read it again, merge, retry); `.server(code: "user_quota_exceeded", …)` when the app's
    ///   quota of user documents is full.
    @discardableResult
    public func putUserData(_ values: [String: SesameConfig.Value], for user: SesameUser, replacing version: String?) async throws(SesameError) -> String {
        var headers = user.headers
        headers["if-match"] = version ?? "\"0\""
        let response = try await authorized("PUT", "v1/user/data", headers: headers, json: values)
        guard response.status == 200, let newVersion = response.headers["etag"] else { throw Self.refused(response) }
        return newVersion
    }

    static func refused(_ response: HTTPExchange.Response) -> SesameError {
        let (code, message) = SesameAPI.refusal(of: response)
        if response.status == 403, code == "version_disabled" { return .versionDisabled(reason: message) }
        return TokenSession.failure(response, code: code, message: message)
    }
}

import Crypto
import Foundation

/// `GET /v1/blob/{key}`'s reply: a short-lived link and what the bytes must be.
struct BlobLink: Decodable, Sendable {
    let url: String
    let sizeBytes: Int64
    /// Lowercase hex of the blob's SHA-256.
    let sha256: String
}

extension SesameClient {
    /// How much one range request of `blob(_:)` asks for: a failed request costs at most this much again.
    public static let blobRangeBytes = 4 * 1024 * 1024
    /// How many failed range requests one download survives.
    static let blobRetries = 4

    /// The blob stored under `key` for this app, downloaded in ranges (a failed range is asked for
    /// again, from where it stopped; an expired link is renewed) and checked against the size and
    /// SHA-256 Sesame announced before it is returned.
    /// - Throws: `SesameError`; `.server(code: "blob_not_found", …)` when there is no such blob,
    ///   `.server(code: "blob_mismatch", …)` when the bytes are not the announced ones.
    public func blob(_ key: String) async throws(SesameError) -> Data {
        var link = try await blobLink(key)
        var data = Data()
        var failures = 0
        /// Spends one of the download's retries, or throws `error` when none is left.
        func retry(or error: SesameError) throws(SesameError) {
            failures += 1
            guard failures < Self.blobRetries else { throw error }
        }
        while Int64(data.count) < link.sizeBytes {
            let first = Int64(data.count)
            let last = min(first + Int64(Self.blobRangeBytes), link.sizeBytes) - 1
            let response: HTTPExchange.Response
            do {
                response = try await api.send("GET", relative: link.url, headers: ["range": "bytes=\(first)-\(last)"])
            } catch {
                try retry(or: error)
                try? await clock.sleep(.milliseconds(250 << failures))
                continue
            }
            switch response.status {
            case 206 where response.body.count == Int(last - first + 1):
                data.append(response.body)
            case 200 where first == 0:
                // A server that ignores Range sends everything at once.
                data = response.body
                if Int64(data.count) < link.sizeBytes { throw Self.mismatch(key) }
            case 403 where SesameAPI.refusal(of: response).code == "invalid_link":
                // Links live five minutes: a long download outlives one.
                try retry(or: .server(code: "invalid_link", message: "Sesame kept refusing the blob's link."))
                let renewed = try await blobLink(key)
                guard renewed.sha256 == link.sha256 else { throw .server(code: "blob_changed", message: "The blob changed while it was downloading; ask again.") }
                link = renewed
            case 500...:
                try retry(or: .network(underlying: "Sesame answered \(response.status)"))
                try? await clock.sleep(.milliseconds(250 << failures))
            default:
                let (code, message) = SesameAPI.refusal(of: response)
                throw TokenSession.failure(response, code: code, message: message)
            }
        }
        guard Int64(data.count) == link.sizeBytes, SHA256.hash(data: data).lowercaseHex == link.sha256 else { throw Self.mismatch(key) }
        return data
    }

    private static func mismatch(_ key: String) -> SesameError {
        .server(code: "blob_mismatch", message: "The bytes of blob '\(key)' are not the ones Sesame announced; nothing was kept.")
    }

    private func blobLink(_ key: String) async throws(SesameError) -> BlobLink {
        let escaped = key.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(CharacterSet(charactersIn: "/"))) ?? key
        let response = try await authorized("GET", "v1/blob/" + escaped)
        guard response.status == 200 else { throw Self.refused(response) }
        guard let link = try? JSONDecoder().decode(BlobLink.self, from: response.body) else {
            throw .server(code: "invalid_response", message: "The blob link reply cannot be read.")
        }
        return link
    }
}

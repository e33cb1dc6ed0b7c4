import Foundation
import NIOCore
import SesameConfiguration
import SesameOutbound

/// Apple's App Attest data server (`data.appattest.apple.com`, and `data-development.appattest.apple.com`
/// for keys attested in the development environment), which trades a receipt for a newer one carrying
/// the risk metric. Reached only through the guarded outbound client, at the addresses the operator
/// configured (`SESAME_APPLE_APP_ATTEST_DATA_URL`, `…_DEVELOPMENT_URL`).
public struct AppAttestDataClient: Sendable {
    /// The largest answer read: a receipt, base64, is about 7 KiB.
    static let maximumAnswerBytes = 128 * 1024

    public let baseURL: String
    public let developmentURL: String
    let outbound: OutboundHTTPClient

    public init(baseURL: String, developmentURL: String, outbound: OutboundHTTPClient) {
        self.baseURL = baseURL.withoutTrailingSlash
        self.developmentURL = developmentURL.withoutTrailingSlash
        self.outbound = outbound
    }

    /// Apple's servers as the operator configured them, through the guarded outbound client.
    public init(configuration: ServiceConfiguration) {
        self.init(
            baseURL: configuration.appleAppAttestDataURL, developmentURL: configuration.appleAppAttestDataDevelopmentURL,
            outbound: OutboundHTTPClient(
                policy: .operatorURLs([configuration.appleAppAttestDataURL, configuration.appleAppAttestDataDevelopmentURL], configuration: configuration)))
    }

    /// What Apple answered a receipt.
    public enum Answer: Equatable, Sendable {
        /// A newer receipt (still to be verified).
        case receipt([UInt8])
        /// 304: the receipt is still current; ask again after its `notBefore`.
        case notModified
    }

    /// Why Apple gave no receipt.
    public enum Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// 400: Apple does not take this receipt (malformed, expired, another team's).
        case receiptRefused
        /// 401, 403: Apple refused the app's DeviceCheck key.
        case keyRefused
        /// 429: Apple asked to slow down.
        case rateLimited
        /// Apple could not be asked, or answered something else; why.
        case unreachable(String)

        public var description: String {
            switch self {
            case .receiptRefused: "Apple refused the receipt"
            case .keyRefused: "Apple refused the app's DeviceCheck key"
            case .rateLimited: "Apple asked Sesame to slow down"
            case .unreachable(let reason): "Apple could not be asked: \(reason)"
            }
        }
    }

    /// Trades `receipt` for a newer one (`POST /v1/attestationData`, the receipt base64 in the body,
    /// a JWT signed by `key` as `Authorization`), asking the development server for development keys.
    public func redeem(_ receipt: [UInt8], key: DeviceCheckKey, development: Bool) async throws(Failure) -> Answer {
        let token: String
        do {
            token = try await key.developerToken()
        } catch {
            throw .unreachable("the JWT could not be signed (\(error))")
        }
        let answer: (status: Int, body: ByteBuffer)
        do {
            answer = try await outbound.postReadingAnswer(
                "\(development ? developmentURL : baseURL)/v1/attestationData", for: OutboundUse(.apple, appID: nil), headers: [("Authorization", token)],
                body: ByteBuffer(string: Data(receipt).base64EncodedString()), maximumBytes: Self.maximumAnswerBytes)
        } catch {
            throw .unreachable("\(error)")
        }
        switch answer.status {
        case 200:
            let text = String(buffer: answer.body).trimmingCharacters(in: .whitespacesAndNewlines)
            guard let bytes = Data(base64Encoded: text), !bytes.isEmpty else { throw .unreachable("its answer is not a base64 receipt") }
            return .receipt(Array(bytes))
        case 304: return .notModified
        case 400: throw .receiptRefused
        case 401, 403: throw .keyRefused
        case 429: throw .rateLimited
        default: throw .unreachable("it answered \(answer.status)")
        }
    }
}

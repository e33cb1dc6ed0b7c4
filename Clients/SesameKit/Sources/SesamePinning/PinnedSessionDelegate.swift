#if canImport(Security)
import Foundation
import Security

/// A `URLSessionDelegate` that accepts a server only when the system trusts its chain and, for a
/// pinned host, SHA-256 of its leaf certificate's SubjectPublicKeyInfo is one of the host's pins.
/// Apple-only and thin: the decision is `PinnedHosts.accepts(spki:for:)`, tested on every platform.
public final class PinnedSessionDelegate: NSObject, URLSessionDelegate, Sendable {
    public let hosts: PinnedHosts

    /// Pins from a verified registry (`PinRegistry.verified`).
    public init(hosts: PinnedHosts) {
        self.hosts = hosts
    }

    public func urlSession(
        _ session: URLSession, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust,
            let trust = challenge.protectionSpace.serverTrust
        else { return completionHandler(.performDefaultHandling, nil) }
        let host = challenge.protectionSpace.host
        guard SecTrustEvaluateWithError(trust, nil),
            let chain = SecTrustCopyCertificateChain(trust) as? [SecCertificate], let leaf = chain.first,
            let spki = try? CertificateSPKI.extract(fromCertificateDER: SecCertificateCopyData(leaf) as Data),
            hosts.accepts(spki: spki, for: host)
        else { return completionHandler(.cancelAuthenticationChallenge, nil) }
        completionHandler(.useCredential, URLCredential(trust: trust))
    }
}
#endif

import Foundation
import SesameDomain
import X509

/// Intermediate certificates that a full chain verification has already led to a trusted root,
/// with the window in which that root is valid.
///
/// Apple signs every device's leaf with one of a few intermediates, and on a real chain each
/// signature is ECDSA over P-384, about half of an attestation's cost: once an intermediate has
/// been verified against its root, checking the leaf against that intermediate (as the anchor) is
/// the rest of the same check. Keyed by the certificate's exact bytes, so only an intermediate
/// that really chained to a trusted root is ever trusted this way; bounded, in case a trusted
/// root (in development, a test's) issues many.
final class VerifiedIntermediates: Sendable {
    private let windows: BoundedMemo<Certificate, ClosedRange<Date>>

    init(capacity: Int = 64) { windows = BoundedMemo(capacity: capacity) }

    /// Whether `intermediate` chained to a trusted root that is valid at `time`.
    func vouchesFor(_ intermediate: Certificate, at time: Date) -> Bool {
        windows.value(for: intermediate)?.contains(time) ?? false
    }

    /// Notes what a full verification established: `chain` (leaf, intermediate, root) is valid.
    func remember(_ chain: ValidatedCertificateChain) {
        let certificates = Array(chain)
        guard certificates.count == 3 else { return }
        let (intermediate, root) = (certificates[1], certificates[2])
        guard root.notValidBefore <= root.notValidAfter else { return }
        windows.remember(root.notValidBefore...root.notValidAfter, for: intermediate)
    }
}

import Synchronization
import X509

/// The intermediates of one chain verification, handed out under a lookup budget.
///
/// swift-certificates' `Verifier` searches every ordering of the certificates it is given, so a
/// handful of self-issued certificates with one subject and key turns one request into minutes of
/// signature checks. Like Go's x509 (its signature-check limit) and webpki (its budget), Sesame caps
/// the search: past `budget` issuer look-ups the store answers nothing and the chain is refused.
/// Each look-up costs at most one signature check per certificate in the store.
struct BudgetedCertificateStore: CustomCertificateStore {
    /// Look-ups left, shared by every copy of the store the verifier makes.
    private final class Budget: Sendable {
        let remaining: Mutex<Int>
        init(_ lookups: Int) { remaining = Mutex(lookups) }

        func spend() -> Bool {
            remaining.withLock { remaining in
                guard remaining > 0 else { return false }
                remaining -= 1
                return true
            }
        }
    }

    private var certificates: [Certificate]
    private let budget: Budget

    /// - Parameter lookups: issuer look-ups allowed; a real App Attest chain needs one.
    init(_ certificates: [Certificate], lookups: Int) {
        self.certificates = certificates
        self.budget = Budget(lookups)
    }

    /// Whether the budget ran out during the search (then the refusal is the budget's, not the chain's).
    var isExhausted: Bool { budget.remaining.withLock { $0 == 0 } }

    subscript(subject: DistinguishedName) -> [Certificate]? {
        get async {
            guard budget.spend() else { return nil }
            let issuers = certificates.filter { $0.subject == subject }
            return issuers.isEmpty ? nil : issuers
        }
    }

    func contains(_ certificate: Certificate) async -> Bool {
        certificates.contains(certificate)
    }

    mutating func append(contentsOf certificates: some Sequence<Certificate>) {
        self.certificates.append(contentsOf: certificates)
    }

    static func == (lhs: Self, rhs: Self) -> Bool { lhs.budget === rhs.budget && lhs.certificates == rhs.certificates }

    func hash(into hasher: inout Hasher) {
        hasher.combine(ObjectIdentifier(budget))
    }
}

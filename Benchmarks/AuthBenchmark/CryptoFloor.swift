import Crypto
import Foundation

/// What this machine's P-256 arithmetic alone allows, measured in the run it is compared with:
/// the most requests a second one core could answer if a flow did nothing but its signatures.
struct CryptoFloor {
    /// P-256 signatures (over a SHA-256 digest) per second on one core.
    let signsPerSecond: Double
    /// P-256 signature verifications per second on one core.
    let verifiesPerSecond: Double

    /// Measures each operation for about `seconds`, on this thread.
    static func measure(seconds: Double = 1.5) -> CryptoFloor {
        let key = P256.Signing.PrivateKey()
        let digest = SHA256.hash(data: Data("header.payload of a token, about this long, signed as a JWT is".utf8))
        let signature = try! key.signature(for: digest)
        return CryptoFloor(
            signsPerSecond: rate(seconds) { _ = try! key.signature(for: digest) },
            verifiesPerSecond: rate(seconds) { _ = key.publicKey.isValidSignature(signature, for: digest) })
    }

    /// Requests a second per core for a flow of `signs` signatures and `verifies` verifications.
    func requestsPerSecondPerCore(signs: Int, verifies: Int) -> Double {
        1 / (Double(signs) / signsPerSecond + Double(verifies) / verifiesPerSecond)
    }

    private static func rate(_ seconds: Double, _ operation: () -> Void) -> Double {
        let clock = ContinuousClock()
        let started = clock.now
        var count = 0
        repeat {
            for _ in 0..<100 { operation() }
            count += 100
        } while clock.now - started < .milliseconds(Int(seconds * 1000))
        let elapsed = clock.now - started
        return Double(count) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}

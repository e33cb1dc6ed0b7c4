/// An app's attestation attempts over some hours, as auth counts them: what the automatic
/// attestation ramp judges and the dashboard shows, so both mean the same success rate.
public struct AttestationAttempts: Equatable, Sendable {
    /// Verified and admitted.
    public var attested: Int64
    /// Refused at one of Apple's validation steps.
    public var refused: Int64
    /// Failed on the device, as SesameKit reported (other than Apple's rate limit).
    public var deviceFailed: Int64
    /// Apple's `serverUnavailable` after SesameKit's retries, as SesameKit reported.
    public var rateLimited: Int64

    public init(attested: Int64 = 0, refused: Int64 = 0, deviceFailed: Int64 = 0, rateLimited: Int64 = 0) {
        self.attested = attested
        self.refused = refused
        self.deviceFailed = deviceFailed
        self.rateLimited = rateLimited
    }

    /// Every attestation that was tried: verified, refused, or failed on the device.
    public var attempts: Int64 { attested + refused + deviceFailed + rateLimited }
    /// `attested` over `attempts`; nil before any attempt.
    public var successRate: Double? { attempts == 0 ? nil : Double(attested) / Double(attempts) }
}

extension AppPolicy {
    /// Whether an automatic ramp auth counted from `startedFrom` is this policy's: one counted from
    /// another start is stale (the policy moved it), and the policy's start stands until auth restarts it.
    public func countsAutomaticRamp(from startedFrom: Double) -> Bool {
        attestationRampAutomatic && attestationRamp == startedFrom
    }
}

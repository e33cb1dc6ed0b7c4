/// Every migration Sesame knows, in order. Append new ones; never edit a released one.
public enum Migrations {
    /// The full sequence.
    public static let all: [Migration] = [
        baseSchema,
        signingKeyActivation,
        serviceKeys,
        blobChunks,
        trustTiers,
        deviceAndKeyUse,
        dashboardAccounts,
        pinRegistry,
        deliveryChanges,
        admissionBudgets,
        debugTokenRevocations,
        pinRegistrySequence,
        appChangeEvents,
        backendKeys,
        configRollouts,
        deviceOverrides,
        rolloutInstalls,
        auditChain,
        configSchemas,
        webhooks,
        changeProposals,
        principals,
        backendKeyAudiences,
        refreshGrace,
        auditHashVersion,
        auditChainStarts,
        credentialMakers,
        appleCredentials,
    ]
}

extension Migrations {
    /// Receipts and the risk metric (issue 59): whether each key's receipt verified, the risk metric
    /// Apple last gave for it and when, and when auth next trades its receipt with Apple (the receipt
    /// column then holds the newest). Keys attested before keep no schedule: only new keys are redeemed.
    static let receiptRisk = Migration(
        version: 30,
        name: "receipt risk",
        statements: [
            """
            ALTER TABLE attested_keys
                ADD COLUMN receipt_state TEXT NOT NULL DEFAULT 'unchecked' CHECK (receipt_state IN ('unchecked', 'verified', 'invalid')),
                ADD COLUMN risk_metric INTEGER,
                ADD COLUMN risk_at TIMESTAMPTZ,
                ADD COLUMN receipt_redeem_after TIMESTAMPTZ,
                ADD COLUMN receipt_failures INTEGER NOT NULL DEFAULT 0
            """,
            """
            CREATE INDEX attested_keys_receipt_due ON attested_keys (receipt_redeem_after)
                WHERE receipt_redeem_after IS NOT NULL AND revoked_at IS NULL
            """,
        ]
    )
}

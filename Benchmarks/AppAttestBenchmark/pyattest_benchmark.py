"""Times pyattest (the reference Python App Attest verifier) on one core, on the same inputs the
Swift benchmark measures: the real iPhone capture at its capture time, and the software attestation
the Swift benchmark wrote to the file given as argument. Prints per-second figures."""
import asyncio
import base64
import datetime
import functools
import json
import pathlib
import sys
import time
from hashlib import sha256

from cryptography.hazmat.primitives.serialization import load_pem_public_key
from cryptography.hazmat.primitives.asymmetric.ec import EllipticCurvePublicKey, SECP256R1
from pyattest.assertion import Assertion
from pyattest.attestation import Attestation
from pyattest.configs.apple import AppleConfig
import pyattest.verifiers.apple_attestation as apple_attestation
from pyhanko_certvalidator import ValidationContext

FIXTURE = pathlib.Path(__file__).parent / "../../Tests/AppAttestTests/Fixtures/ios-14.4-development.json"


def measure(label, operation, seconds=3.0):
    for _ in range(5):
        operation()
    count, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        operation()
        count += 1
    per_second = count / (time.perf_counter() - start)
    print(f"pyattest {label}: {per_second:.0f}/s ({1e6 / per_second:.1f} µs each, {count} runs)")


LOOP = asyncio.new_event_loop()


def verify_attestation(raw, nonce, config):
    LOOP.run_until_complete(Attestation(raw, nonce, config).verify())


def real_capture():
    fixture = json.loads(FIXTURE.read_text())
    at = datetime.datetime.fromisoformat(fixture["at"].replace("Z", "+00:00"))
    client_data_hash = base64.b64decode(fixture["clientDataHash"])
    # pyattest validates the chain now and derives clientDataHash from the challenge; the capture's
    # certificates have expired and its challenge is unpublished. Verify at the capture time, and
    # compare the certified nonce with SHA256(authData ‖ clientDataHash) directly.
    apple_attestation.ValidationContext = functools.partial(ValidationContext, moment=at)
    original_verify_nonce = apple_attestation.AppleAttestationVerifier.verify_nonce

    def verify_nonce(self, auth_data, nonce, cert):
        expected = self._get_extension(self.attestation.config.oid, cert)[2].contents[6:]
        if sha256(auth_data + nonce).digest() != expected:
            raise apple_attestation.InvalidNonceException

    apple_attestation.AppleAttestationVerifier.verify_nonce = verify_nonce
    config = AppleConfig(key_id=base64.b64decode(fixture["keyId"]), app_id=fixture["appId"], production=False)
    raw = base64.b64decode(fixture["attestation"])
    measure("attestation, real iPhone capture", lambda: verify_attestation(raw, client_data_hash, config))
    public_key = EllipticCurvePublicKey.from_encoded_point(SECP256R1(), base64.b64decode(fixture["expectedPublicKey"]))
    assertion = base64.b64decode(fixture["assertion"])
    expected_hash = base64.b64decode(fixture["assertionClientDataHash"])
    measure("assertion, real iPhone capture",
            lambda: Assertion(assertion, expected_hash, public_key, config).verify())
    apple_attestation.ValidationContext = ValidationContext
    apple_attestation.AppleAttestationVerifier.verify_nonce = original_verify_nonce


def software_attestation(path):
    data = json.loads(pathlib.Path(path).read_text())
    config = AppleConfig(key_id=base64.b64decode(data["keyId"]), app_id=data["appId"], production=False,
                         root_ca=data["rootPem"].encode())
    raw = base64.b64decode(data["attestation"])
    challenge = base64.b64decode(data["challenge"])
    measure("attestation, software chain", lambda: verify_attestation(raw, challenge, config))
    public_key = load_pem_public_key(data["publicKeyPem"].encode())
    assertion = base64.b64decode(data["assertion"])
    expected_hash = base64.b64decode(data["assertionClientDataHash"])
    measure("assertion, software key", lambda: Assertion(assertion, expected_hash, public_key, config).verify())


if __name__ == "__main__":
    real_capture()
    if len(sys.argv) > 1:
        software_attestation(sys.argv[1])

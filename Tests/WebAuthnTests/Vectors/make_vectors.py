"""Writes vectors.json: WebAuthn registration and assertion responses built by the `fido2`
package (an implementation independent of ours) and signed with `cryptography`, for Sesame's
WebAuthn verifier tests. Run: python3 make_vectors.py > vectors.json (pip install fido2)."""
import base64, hashlib, json, os
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from fido2 import cose
from fido2.webauthn import AttestationObject, AttestedCredentialData, AuthenticatorData, CollectedClientData

RP_ID = "localhost"
ORIGIN = "http://localhost:8080"
F = AuthenticatorData.FLAG


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def registration(key, credential_id, challenge, flags=F.UP | F.UV | F.AT, fmt="none", origin=ORIGIN, rp_id=RP_ID, kind="webauthn.create"):
    public = cose.ES256.from_cryptography_key(key.public_key())
    credential = AttestedCredentialData.create(b"\0" * 16, credential_id, public)
    auth_data = AuthenticatorData.create(hashlib.sha256(rp_id.encode()).digest(), flags, 0, credential)
    client_data = CollectedClientData.create(kind, challenge, origin)
    statement = {} if fmt == "none" else {"alg": -7, "sig": b"\0" * 70}
    return {
        "attestationObject": b64u(bytes(AttestationObject.create(fmt, auth_data, statement))),
        "clientDataJSON": b64u(bytes(client_data)),
    }


def assertion(key, challenge, counter, flags=F.UP | F.UV, origin=ORIGIN, rp_id=RP_ID, kind="webauthn.get"):
    auth_data = bytes(AuthenticatorData.create(hashlib.sha256(rp_id.encode()).digest(), flags, counter))
    client_data = bytes(CollectedClientData.create(kind, challenge, origin))
    signature = key.sign(auth_data + hashlib.sha256(client_data).digest(), ec.ECDSA(hashes.SHA256()))
    return {"authenticatorData": b64u(auth_data), "clientDataJSON": b64u(client_data), "signature": b64u(signature)}


key = ec.generate_private_key(ec.SECP256R1())
credential_id = os.urandom(32)
register_challenge, login_challenge = os.urandom(32), os.urandom(32)
print(json.dumps({
    "rpId": RP_ID,
    "origin": ORIGIN,
    "credentialId": b64u(credential_id),
    "publicKeyX963": b64u(key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)),
    "registerChallenge": b64u(register_challenge),
    "loginChallenge": b64u(login_challenge),
    "registration": registration(key, credential_id, register_challenge),
    "registrationWithoutUserVerification": registration(key, credential_id, register_challenge, flags=F.UP | F.AT),
    "registrationPacked": registration(key, credential_id, register_challenge, fmt="packed"),
    "registrationOtherOrigin": registration(key, credential_id, register_challenge, origin="https://evil.example"),
    "registrationOtherRP": registration(key, credential_id, register_challenge, rp_id="evil.example"),
    "registrationAsGet": registration(key, credential_id, register_challenge, kind="webauthn.get"),
    "assertion": assertion(key, login_challenge, 7),
    "assertionWithoutUserVerification": assertion(key, login_challenge, 8, flags=F.UP),
    "assertionWithoutUserPresence": assertion(key, login_challenge, 9, flags=F.UV),
    "assertionOtherOrigin": assertion(key, login_challenge, 10, origin="http://localhost:9999"),
    "assertionAsCreate": assertion(key, login_challenge, 11, kind="webauthn.create"),
    "assertionCounterZero": assertion(key, login_challenge, 0),
}, indent=2))

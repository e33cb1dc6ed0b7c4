#!/usr/bin/env python3
"""Writes Sesame vault test vectors with an implementation independent of the Swift one
(Python's hashlib scrypt and the `cryptography` package), from the format in the README.

    python3 make_vectors.py   # rewrites vector-*.json here
"""
import base64, hashlib, json, os

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF


def seal(plaintext: bytes, password: str, n: int, r: int, p: int) -> dict:
    salt, nonce = os.urandom(16), os.urandom(12)
    stretched = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, maxmem=256 * 1024 * 1024, dklen=32)
    key = HKDF(algorithm=hashes.SHA256(), length=32, salt=salt, info=b"sesame-vault/1/aes-256-gcm").derive(stretched)
    sealed = AESGCM(key).encrypt(nonce, plaintext, b"sesame-vault/1")
    return {
        "sesameVault": 1,
        "kdf": {"name": "scrypt", "n": n, "r": r, "p": p, "salt": base64.b64encode(salt).decode()},
        "cipher": "AES-256-GCM",
        "nonce": base64.b64encode(nonce).decode(),
        "ciphertext": base64.b64encode(sealed).decode(),
    }


cases = [
    ("correct horse battery staple", b'{"api_keys":{"stripe":"sk_live_123"},"features":{"dark_mode":true}}', 1 << 15, 8, 1),
    ("pässwörd ✓ with unicode", b'{"endpoint":"https://api.example.com/v2","limits":{"max_upload_mb":50}}', 1 << 14, 8, 2),
    ("", b"{}", 1 << 10, 4, 1),
]
for index, (password, plaintext, n, r, p) in enumerate(cases, start=1):
    vector = {"password": password, "plaintext": plaintext.decode(), "envelope": seal(plaintext, password, n, r, p)}
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"vector-{index}.json"), "w") as out:
        json.dump(vector, out, indent=2, ensure_ascii=False)
        out.write("\n")

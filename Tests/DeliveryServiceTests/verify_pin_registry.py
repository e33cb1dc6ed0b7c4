"""Verifies a served pin registry as an independent client would: RFC 8785 (the `rfc8785` package)
over the payload, RSA PKCS#1 v1.5 with SHA-512 (`cryptography`), with the public key given as the
single-line base64 of its PEM, as the SslPinning SDK takes it. Prints the pinned domain names;
exits 1 when the signature does not verify.
Usage: verify_pin_registry.py REGISTRY.json SIGNING_KEY_BASE64_FILE"""
import base64, json, sys
import rfc8785
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

document = json.load(open(sys.argv[1]))
key = serialization.load_pem_public_key(base64.b64decode(open(sys.argv[2]).read()))
try:
    key.verify(base64.b64decode(document["signature"]), rfc8785.dumps(document["payload"]), padding.PKCS1v15(), hashes.SHA512())
except InvalidSignature:
    print("invalid signature")
    sys.exit(1)
print(json.dumps(sorted(entry["domainName"] for entry in document["payload"]["keys"])))

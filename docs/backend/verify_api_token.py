#!/usr/bin/env python3
"""Verifies a Sesame API token in a Python backend, with PyJWT and nothing of Sesame's.

    pip install "pyjwt[crypto]"

    claims = verify_api_token(token, jwks_url="https://sesame.example.com/.well-known/jwks.json",
                              audience="https://api.example.com", app_id="A1B2C3D4E5.com.example.app",
                              bound_to=session_token.encode())

As a command (what Sesame's tests run): verify_api_token.py TOKEN JWKS_URL AUDIENCE APP_ID [BOUND_VALUE]
prints the claims as JSON and exits 0, or prints why not and exits 1.
"""
import base64
import hashlib
import json
import sys

import jwt

_clients = {}


def verify_api_token(token, jwks_url, audience, app_id, bound_to=None):
    """The token's claims, or jwt.InvalidTokenError saying why it is refused."""
    # One client per JWKS URL: it caches the keys and fetches again for an unknown kid.
    client = _clients.setdefault(jwks_url, jwt.PyJWKClient(jwks_url, cache_keys=True, lifespan=300))
    if jwt.get_unverified_header(token).get("typ") != "app-api+jwt":
        raise jwt.InvalidTokenError("not a Sesame API token (header typ)")
    claims = jwt.decode(
        token, client.get_signing_key_from_jwt(token).key, algorithms=["ES256"], audience=audience,
        options={"require": ["exp", "iat", "aud", "sub", "jti"]})
    if claims.get("typ") != "api":
        raise jwt.InvalidTokenError("not a Sesame API token (typ)")
    if claims.get("app") != app_id:
        raise jwt.InvalidTokenError("issued to another app")
    if claims.get("tier") != "attested":
        raise jwt.InvalidTokenError("not from an attested install")
    if bound_to is not None:
        expected = base64.urlsafe_b64encode(hashlib.sha256(bound_to).digest()).rstrip(b"=").decode()
        if claims.get("bnd") != expected:
            raise jwt.InvalidTokenError("bound to another value")
    return claims


if __name__ == "__main__":
    token, jwks_url, audience, app_id = sys.argv[1:5]
    bound = sys.argv[5].encode() if len(sys.argv) > 5 else None
    try:
        print(json.dumps(verify_api_token(token, jwks_url, audience, app_id, bound)))
    except jwt.InvalidTokenError as error:
        print(f"refused: {error}")
        sys.exit(1)

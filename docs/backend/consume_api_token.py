#!/usr/bin/env python3
"""Redeems a Sesame single-use API token from a Python backend, with the standard library only.

    claims = consume_api_token(token, sesame_url="https://sesame.example.com",
                               backend_key=os.environ["SESAME_BACKEND_KEY"], audience="https://api.example.com")

The first call for a token answers its claims; any later one raises Refused("already_consumed"), so a
captured purchase request cannot be replayed. Keep the backend key (`sesame backend-keys create`)
where your other secrets are: it can only redeem tokens and check assertions for its app.

As a command (what Sesame's tests run): consume_api_token.py TOKEN SESAME_URL AUDIENCE BACKEND_KEY_FILE
prints the claims as JSON and exits 0, or prints "refused: CODE" and exits 1.
"""
import json
import sys
import urllib.error
import urllib.request


class Refused(Exception):
    """Sesame refused the token; `code` says why (already_consumed, invalid_token, wrong_app, …)."""

    def __init__(self, status, code):
        super().__init__(f"{code} ({status})")
        self.status, self.code = status, code


def consume_api_token(token, sesame_url, backend_key, audience):
    """The token's claims, the first time it is presented; Refused after."""
    request = urllib.request.Request(
        sesame_url.rstrip("/") + "/v1/verify/consume",
        data=json.dumps({"token": token, "audience": audience}).encode(),
        headers={"Authorization": "Bearer " + backend_key, "Content-Type": "application/json"},
        method="POST")
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        try:
            code = json.load(error)["error"]["code"]
        except (ValueError, KeyError, TypeError):
            code = "unreadable_reply"
        raise Refused(error.code, code) from None


if __name__ == "__main__":
    token, sesame_url, audience, key_file = sys.argv[1:5]
    with open(key_file) as file:
        backend_key = file.read().strip()
    try:
        print(json.dumps(consume_api_token(token, sesame_url, backend_key, audience)))
    except Refused as refusal:
        print(f"refused: {refusal.code}")
        sys.exit(1)

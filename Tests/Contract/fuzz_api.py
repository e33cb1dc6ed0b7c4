"""Holds each running service to its OpenAPI document with schemathesis (./sesame-dev fuzz).

Sets up one app through the real API (a provisioning key, a published config, a blob, a policy
that lets a debug-tier token reach blobs and user data, a debug token exchanged for an access
token), then runs schemathesis on every operation of each service's document against that
service's own port, with the credentials the document names. Fails when any check fails.

    python fuzz_api.py --runner .../sesame-suite --schemathesis …/schemathesis --gateway URL
        --auth URL --delivery URL --admin URL --documents Services --reports DIR --examples N --seed S --workers W
"""
import argparse
import base64
import json
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import yaml

TEAM, BUNDLE = "FUZZTEAM01", "com.example.fuzz"
# What no schema-driven check can judge: a request valid by the schema may still be refused
# (a made-up attestation is 401, by design).
EXCLUDED_CHECKS = ["positive_data_acceptance"]


def http(url, method="GET", body=None, headers=None):
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"{}")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def expect_ok(what, status, body):
    if status != 200:
        sys.exit(f"fuzz setup: {what} answered {status}: {body}")
    return body


def set_up(arguments):
    """A provisioning key and a debug-tier access token for one app with something to serve."""
    result = subprocess.run(
        [arguments.runner, "run", "admin", "keys", "create", "--team-id", TEAM, "--bundle-id", BUNDLE, "--name", "fuzz"],
        capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        sys.exit(f"fuzz setup: keys create failed: {result.stderr}")
    key = result.stdout.strip().splitlines()[-1]
    admin = {"Authorization": f"Bearer {key}"}
    gateway = arguments.gateway
    expect_ok("config upload", *http(f"{gateway}/v1/admin/config/upload", "POST", {
        "version": "*", "config": {"features": {"onboarding": True}, "api_keys": {"maps": "fuzz"}},
        "tiers": {"features": "debug", "api_keys": "debug"}}, admin))
    expect_ok("blob upload", *http(f"{gateway}/v1/admin/blob/upload", "POST", {
        "blob_key": "onboarding-video", "data_base64": base64.b64encode(b"fuzz" * 1000).decode(), "content_type": "video/mp4"}, admin))
    expect_ok("policy", *http(f"{gateway}/v1/admin/policy", "PUT", {
        "blobTier": "debug", "userDataTier": "debug", "userIdentity": "unverified"}, admin))
    debug_token = expect_ok("debug token", *http(f"{gateway}/v1/admin/debug-tokens", "POST", {"name": "fuzz", "ttl": "1d"}, admin))["debugToken"]
    exchanged = expect_ok("debug exchange", *http(f"{gateway}/v1/auth/debug", "POST", {
        "debugToken": debug_token, "teamId": TEAM, "bundleId": BUNDLE, "appVersion": "1.0.0"}))
    return key, exchanged["accessToken"]


def check_served_documents(arguments):
    """Each service serves its document, and the gateway exposes it, exactly as its openapi.yaml says."""
    for service in ["auth", "delivery", "admin"]:
        expected = yaml.safe_load((Path(arguments.documents) / service / "openapi.yaml").read_text())
        for url in [f"{getattr(arguments, service)}/openapi.json", f"{arguments.gateway}/openapi/{service}.json"]:
            status, served = http(url)
            if status != 200 or served != expected:
                sys.exit(f"{url} does not serve Services/{service}/openapi.yaml (status {status})")


def fuzz(arguments, service, url, headers):
    """Runs schemathesis on one service; returns whether every check passed."""
    report = Path(arguments.reports) / f"{service}.xml"
    # Through schemathesis_serial_ast.py: its threads would otherwise meet python/cpython#106905.
    command = [
        str(Path(arguments.schemathesis).parent / "python3"), str(Path(__file__).parent / "schemathesis_serial_ast.py"),
        "run", str(Path(arguments.documents) / service / "openapi.yaml"),
        "--url", url, "--checks", "all", "--exclude-checks", ",".join(EXCLUDED_CHECKS),
        "--max-examples", str(arguments.examples), "--seed", str(arguments.seed),
        # Answers may take up to the request timeout: a pin registry's new RSA-4096 signing key took
        # 10.3 s on two cores beside the second worker, past schemathesis' default limit of 10 s.
        "--request-timeout", "30", "--max-response-time", "30", "--workers", str(arguments.workers), "--no-color", "--continue-on-failure",
        "--report", "junit", "--report-junit-path", str(report),
        # A live-config stream stays open for as long as its token lives: the fuzzer's 30 s request
        # timeout would fail every example. SesameKitLiveTests and the end-to-end walk test it.
        "--exclude-operation-id", "getConfigUpdates",
    ]
    for name, value in headers.items():
        command += ["--header", f"{name}: {value}"]
    print(f"--- schemathesis: {service} ({url})", flush=True)
    # In the reports folder: schemathesis keeps its example database in the working directory.
    return subprocess.run(command, cwd=arguments.reports).returncode == 0


def main():
    parser = argparse.ArgumentParser()
    for option in ["runner", "schemathesis", "gateway", "auth", "delivery", "admin", "documents", "reports"]:
        parser.add_argument(f"--{option}", required=True)
    parser.add_argument("--examples", type=int, default=25)
    parser.add_argument("--seed", type=int, default=20261124)
    parser.add_argument("--only", help="one service")
    # Two at a time took the admin document from 146 s to 95 s on two cores, with the same warnings;
    # the order of examples then varies between runs: one worker replays a seed exactly.
    parser.add_argument("--workers", type=int, default=2)
    arguments = parser.parse_args()
    Path(arguments.reports).mkdir(parents=True, exist_ok=True)
    check_served_documents(arguments)
    key, access_token = set_up(arguments)
    # Delivery before admin: the admin fuzz switches versions off, revokes, deletes configs.
    runs = [
        ("auth", arguments.auth, {}),
        ("delivery", arguments.delivery, {"Authorization": f"Bearer {access_token}"}),
        ("admin", arguments.admin, {"Authorization": f"Bearer {key}"}),
    ]
    failed = [service for service, url, headers in runs if (not arguments.only or arguments.only == service) and not fuzz(arguments, service, url, headers)]
    if failed:
        sys.exit(f"the API does not keep its OpenAPI contract: {', '.join(failed)} (reports in {arguments.reports})")
    print("every service keeps its OpenAPI contract")


if __name__ == "__main__":
    main()

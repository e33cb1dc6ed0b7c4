#!/usr/bin/env python3
"""Checks the GitHub Action (action.yml) without GitHub.

- action.yml and deploy/github-workflow-example.yml are valid against the action-metadata and
  workflow JSON schemas (check-jsonschema's vendored copies), and a broken copy of each is refused,
  so the validator is known to be looking.
- Every input the steps read is declared, and every declared input is read.
- The upload step runs as a runner would run it (its `${{ inputs.* }}` replaced by values, bash with
  -e and pipefail, a GITHUB_OUTPUT file) against a live suite: a plain upload with a tier, a
  zero-knowledge upload (the server holds no plaintext), a bad `encrypt` refused, Kiskis's
  `zero-knowledge: 'true'` without `encrypt` refused before anything is sent; the outputs name
  the revision and pattern, and the key never appears in what the step printed.

Usage: check_action.py --check-jsonschema EXE --runner .../sesame-suite --cli PATH --gateway URL
(run by ./sesame-dev test)
"""
import argparse
import json
import pathlib
import re
import subprocess
import sys
import tempfile

import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
ACTION = ROOT / "action.yml"
WORKFLOW = ROOT / "deploy" / "github-workflow-example.yml"
TEAM, BUNDLE = "ACTIONTEST", "com.example.action"

failures = 0


def check(description, passed, detail=""):
    global failures
    print(f"action {'ok  ' if passed else 'FAIL'} {description}" + ("" if passed else f": {detail}"))
    failures += 0 if passed else 1


def valid(validator, schema, path):
    result = subprocess.run([validator, "--builtin-schema", schema, str(path)], capture_output=True, text=True)
    return result.returncode == 0, result.stdout + result.stderr


def check_schemas(validator):
    for path, schema, breakage in [
        (ACTION, "vendor.github-actions", ("using: composite", "using: compost")),
        (WORKFLOW, "vendor.github-workflows", ("contents: read", "contents: sometimes")),
    ]:
        passed, detail = valid(validator, schema, path)
        check(f"{path.relative_to(ROOT)} is valid against {schema}", passed, detail)
        with tempfile.NamedTemporaryFile("w", suffix=".yml") as broken:
            text = path.read_text()
            check(f"the breakage for {path.name} applies", breakage[0] in text)
            broken.write(text.replace(*breakage, 1))
            broken.flush()
            check(f"the schema check refuses a broken {path.name}", not valid(validator, schema, broken.name)[0])


def check_inputs(action):
    declared = set(action["inputs"])
    read = set(re.findall(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}", ACTION.read_text()))
    check("every input read is declared, every declared input is read", declared == read, f"declared {declared}, read {read}")
    check("url, key and file are required", all(action["inputs"][name].get("required") for name in ("url", "key", "file")))
    upload = next(step for step in action["runs"]["steps"] if step.get("id") == "upload")
    check("the upload step reads inputs only through its environment (never spliced into the script)", "${{" not in upload["run"])


def run_upload_step(action, inputs, cli):
    """The upload step with `inputs` (defaults for the rest): (exit status, printed text, outputs)."""
    step = next(step for step in action["runs"]["steps"] if step.get("id") == "upload")
    values = {name: spec.get("default", "") for name, spec in action["inputs"].items()} | inputs

    def substitute(text):
        text = re.sub(r"\$\{\{\s*inputs\.([a-z-]+)\s*\}\}", lambda match: values[match.group(1)], text)
        return text.replace("${{ github.action_path }}", str(ROOT))

    with tempfile.NamedTemporaryFile("r", suffix=".out") as outputs:
        environment = {name: substitute(value) for name, value in step["env"].items()}
        environment |= {"SESAME_CLI": cli, "GITHUB_OUTPUT": outputs.name, "PATH": "/usr/bin:/bin"}
        # As GitHub runs a composite step whose shell is bash.
        result = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", step["run"]],
                                env=environment, capture_output=True, text=True, cwd=inputs.get("cwd", ROOT), timeout=120)
        written = dict(line.split("=", 1) for line in outputs.read().splitlines() if "=" in line)
    return result.returncode, result.stdout + result.stderr, written


def sesame(cli, gateway, key, *arguments):
    result = subprocess.run([cli, *arguments], capture_output=True, text=True, timeout=60,
                            env={"SESAME_URL": gateway, "SESAME_KEY": key, "PATH": "/usr/bin:/bin"})
    return result.returncode, result.stdout


def check_uploads(action, arguments):
    created = subprocess.run(
        [arguments.runner, "run", "admin", "keys", "create", "--team-id", TEAM, "--bundle-id", BUNDLE, "--name", "action"],
        capture_output=True, text=True, timeout=300)
    if created.returncode != 0:
        sys.exit(f"action setup: keys create failed: {created.stderr}")
    key = created.stdout.strip().splitlines()[-1]
    with tempfile.TemporaryDirectory() as work:
        plain = pathlib.Path(work, "default.json")
        plain.write_text(json.dumps({"features": {"beta": True}, "api": {"url": "https://api.example.com"}}))
        status, printed, outputs = run_upload_step(action, {
            "url": arguments.gateway, "key": key, "file": str(plain), "tiers": "features=unattested"}, arguments.cli)
        check("a plain upload publishes revision 1 for *", status == 0 and outputs == {"revision": "1", "pattern": "*"},
              f"status {status}, outputs {outputs}: {printed}")
        _, body = sesame(arguments.cli, arguments.gateway, key, "config", "body", "--ver", "*")
        check("the server holds the file as it is", json.loads(body or "{}") == json.loads(plain.read_text()), body)

        secret = pathlib.Path(work, "secrets.json")
        secret.write_text(json.dumps({"payments": {"apiKey": "pk_live_never_seen_by_sesame"}}))
        status, printed, outputs = run_upload_step(action, {
            "url": arguments.gateway, "key": key, "file": str(secret), "version": "2.*", "encrypt": "true",
            "vault-password": "correct horse battery staple"}, arguments.cli)
        check("a zero-knowledge upload publishes revision 1 for 2.*", status == 0 and outputs == {"revision": "1", "pattern": "2.*"},
              f"status {status}, outputs {outputs}: {printed}")
        _, body = sesame(arguments.cli, arguments.gateway, key, "config", "body", "--ver", "2.*")
        check("the server holds ciphertext, not the secret", bool(body) and "pk_live_never_seen_by_sesame" not in body, body)

        status, printed, outputs = run_upload_step(action, {
            "url": arguments.gateway, "key": key, "file": str(plain), "encrypt": "yes"}, arguments.cli)
        check("encrypt other than true or false is refused before anything is sent",
              status != 0 and "::error::" in printed and outputs == {}, f"status {status}: {printed}")
        status, printed, outputs = run_upload_step(action, {
            "url": arguments.gateway, "key": key, "file": str(secret), "zero-knowledge": "true"}, arguments.cli)
        check("zero-knowledge 'true' without encrypt fails closed: nothing is uploaded",
              status != 0 and "::error::" in printed and outputs == {}, f"status {status}: {printed}")
        _, body = sesame(arguments.cli, arguments.gateway, key, "config", "body", "--ver", "*")
        check("the plaintext upload did not happen", "pk_live_never_seen_by_sesame" not in (body or ""), body)
        status, printed, outputs = run_upload_step(action, {
            "url": arguments.gateway, "key": "sk_prod_" + "x" * 43, "file": str(plain)}, arguments.cli)
        check("a wrong key fails the step", status != 0 and outputs == {}, f"status {status}: {printed}")
        check("the key never appears in what the step printed", key not in printed)


def main():
    parser = argparse.ArgumentParser()
    for option in ["check-jsonschema", "runner", "cli", "gateway"]:
        parser.add_argument(f"--{option}", required=True)
    arguments = parser.parse_args()
    action = yaml.safe_load(ACTION.read_text())
    check_schemas(arguments.check_jsonschema)
    check_inputs(action)
    check_uploads(action, arguments)
    print(f"action: {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

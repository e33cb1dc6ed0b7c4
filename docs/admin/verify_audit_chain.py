#!/usr/bin/env python3
"""Checks an app's audit chain without Sesame's code: Python's standard library and `rfc8785`.

Reads the app's entries as JSON lines, oldest first, on standard input; psql writes them:

    psql "$DATABASE_URL" -At -c "SELECT json_build_object('app_id', app_id, 'id', id,
      'at_us', (EXTRACT(EPOCH FROM at) * 1000000)::bigint, 'actor', actor, 'action', action,
      'pattern', pattern, 'revision', revision, 'details', details,
      'previous_hash', encode(previous_hash, 'hex'), 'entry_hash', encode(entry_hash, 'hex'),
      'hash_version', hash_version) FROM audit_log WHERE app_id = 'TEAMID.com.example.app' ORDER BY id" \
      | python3 verify_audit_chain.py [--head HEX]       (or with the lines in a file: verify_audit_chain.py FILE)

Each entry must follow the one before it (its previous hash is that entry's hash); each entry of
hash version 2 must hash to what it stores: SHA-256 over "sesame.audit.v2", the previous hash, the
app id, the id, the time in microseconds, actor, action, pattern, revision and the details as RFC
8785 canonical JSON, each prefixed with its length as 8 big-endian bytes (a missing pattern or
revision is one 0 byte, a present one 1 and the value). Version 1 entries (written before November
28, 2026) are linked but their hashes are not recomputed: their details were Foundation's JSON.
Seals need the master key and are not checked here (`sesame audit verify` does).

Prints `intact: N entries, head HEX` and exits 0, or `broken at ID: why` and exits 1.
"""

import hashlib
import json
import sys

import rfc8785

LARGEST_EXACT = 2**53


def field(data: bytes) -> bytes:
    return len(data).to_bytes(8, "big") + data


def number(value: int) -> bytes:
    return value.to_bytes(8, "big", signed=True)


def entry_hash(entry: dict, previous: bytes) -> bytes:
    hasher = hashlib.sha256()
    for part in (
        b"sesame.audit.v2",
        previous,
        entry["app_id"].encode(),
        number(entry["id"]),
        number(entry["at_us"]),
        entry["actor"].encode(),
        entry["action"].encode(),
        b"\x00" if entry["pattern"] is None else b"\x01" + entry["pattern"].encode(),
        b"\x00" if entry["revision"] is None else b"\x01" + number(entry["revision"]),
        rfc8785.dumps(entry["details"]),
    ):
        hasher.update(field(part))
    return hasher.digest()


def as_json_number(text: str):
    """An integer JSON cannot carry exactly is the double it stands for, as Sesame hashed it."""
    value = int(text)
    return value if abs(value) <= LARGEST_EXACT else float(value)


def main() -> int:
    expected_head = sys.argv[sys.argv.index("--head") + 1] if "--head" in sys.argv else None
    head, count, reached = None, 0, expected_head is None
    arguments = [a for i, a in enumerate(sys.argv[1:], 1) if a != "--head" and sys.argv[i - 1] != "--head"]
    source = open(arguments[0]) if arguments else sys.stdin
    for line in source:
        if not line.strip():
            continue
        entry = json.loads(line, parse_int=as_json_number)
        count += 1
        if entry["entry_hash"] is None:
            if head is not None:
                print(f"broken at {entry['id']}: the entry has lost its hash, after the chain began")
                return 1
            continue  # written before the chain began
        previous = bytes.fromhex(entry["previous_hash"] or "")
        if previous != (bytes.fromhex(head) if head else bytes(32)):
            print(f"broken at {entry['id']}: it does not follow the entry before it")
            return 1
        if entry["hash_version"] == 2 and entry_hash(entry, previous).hex() != entry["entry_hash"]:
            print(f"broken at {entry['id']}: its hash does not cover what it says")
            return 1
        if entry["hash_version"] not in (1, 2):
            print(f"broken at {entry['id']}: hash version {entry['hash_version']} is unknown here")
            return 1
        head = entry["entry_hash"]
        reached = reached or head == expected_head
    if not reached:
        print(f"broken: the chain no longer reaches the head {expected_head}")
        return 1
    print(f"intact: {count} entries, head {head}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

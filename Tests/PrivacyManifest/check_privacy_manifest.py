#!/usr/bin/env python3
"""Fails when SesameKit's privacy manifest and its code disagree about Apple's required-reason APIs.

Apple rejects an app whose SDKs call a required-reason API (file timestamps, system boot time, disk
space, active keyboards, UserDefaults) without declaring its category and a reason in their
`PrivacyInfo.xcprivacy`. This finds each category the library targets' code uses (from the table
below, after `Tests/Availability`'s blanking of comments and strings) and checks that the manifest
declares it with at least one reason, and that it declares nothing the code no longer uses.

`--self-test` checks the table against `Fixtures/`, whose lines say which category they use
(`// uses: CATEGORY`).
"""

from __future__ import annotations

import argparse
import plistlib
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT / "Tests/Availability"))
from check_availability import blank_comments_and_strings  # noqa: E402

MANIFEST = ROOT / "Clients/SesameKit/Sources/SesameKit/PrivacyInfo.xcprivacy"
SOURCES = [ROOT / "Clients/SesameKit/Sources" / name for name in ("SesameKit", "SesameJSON", "SesamePinning", "SesameRelayProof", "SesameScope", "SesameVault")]

# (pattern in code, category): the APIs of Apple's list ("Describing use of required reason API").
REQUIRED_REASON_APIS: list[tuple[str, str]] = [
    (r"\.(creationDate|modificationDate|contentModificationDate|creationDateKey|contentModificationDateKey|fileModificationDate)\b|"
     r"\bgetattrlist\b|\bfstat\b|\blstat\b|\bstat\(", "NSPrivacyAccessedAPICategoryFileTimestamp"),
    (r"\.systemUptime\b|\bmach_absolute_time\b|\bkern\.boottime\b", "NSPrivacyAccessedAPICategorySystemBootTime"),
    (r"\b(volumeAvailableCapacity\w*|systemFreeSize|systemSize)\b|\bstatfs\b|\bstatvfs\b", "NSPrivacyAccessedAPICategoryDiskSpace"),
    (r"\bactiveInputModes\b", "NSPrivacyAccessedAPICategoryActiveKeyboards"),
    (r"\bUserDefaults\b|\bNSUserDefaults\b", "NSPrivacyAccessedAPICategoryUserDefaults"),
]


def used_categories(files: list[Path]) -> dict[str, str]:
    """Each category the code uses, with the first place it does."""
    used: dict[str, str] = {}
    for path in files:
        code = blank_comments_and_strings(path.read_text())
        for pattern, category in REQUIRED_REASON_APIS:
            found = re.search(pattern, code)
            if found and category not in used:
                line = code.count("\n", 0, found.start()) + 1
                used[category] = f"{path.relative_to(ROOT)}:{line}"
    return used


def declared_categories(manifest: Path) -> dict[str, list[str]]:
    entries = plistlib.loads(manifest.read_bytes()).get("NSPrivacyAccessedAPITypes", [])
    return {entry["NSPrivacyAccessedAPIType"]: list(entry.get("NSPrivacyAccessedAPITypeReasons", [])) for entry in entries}


def self_test() -> int:
    failures = 0
    for path in sorted((HERE / "Fixtures").glob("*.swift")):
        expected = set(re.findall(r"// uses: (\S+)", path.read_text()))
        found = set(used_categories([path]))
        if found != expected:
            print(f"self-test: {path.name}: found {sorted(found)}, expected {sorted(expected)}")
            failures += 1
    if failures:
        return 1
    print("privacy manifest self-test: each required-reason category in the fixtures found, nothing else")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="check the table against Fixtures/")
    if parser.parse_args().self_test:
        return self_test()
    files = sorted(p for folder in SOURCES for p in folder.rglob("*.swift"))
    used = used_categories(files)
    declared = declared_categories(MANIFEST)
    problems = []
    for category, place in sorted(used.items()):
        if not declared.get(category):
            problems.append(f"{place}: uses {category}, which PrivacyInfo.xcprivacy does not declare with a reason")
    for category in sorted(set(declared) - set(used)):
        problems.append(f"PrivacyInfo.xcprivacy declares {category}, which SesameKit no longer uses")
    for problem in problems:
        print(problem)
    if problems:
        return 1
    print(f"privacy manifest: every required-reason API category SesameKit uses ({', '.join(sorted(used)) or 'none'}) is declared with a reason")
    return 0


if __name__ == "__main__":
    sys.exit(main())

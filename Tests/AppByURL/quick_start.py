#!/usr/bin/env python3
"""Writes Sources/QuickStart/main.swift from the README's quick start, verbatim, with one line that
prints what it read, so that the end-to-end walk can run the README's own lines; and checks that
docs/ios.md, which iOS developers read instead, shows the same lines."""

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
README = HERE.parent.parent / "README.md"
IOS_GUIDE = HERE.parent.parent / "docs" / "ios.md"


def quick_start(page: Path) -> str:
    """The ```swift block after the page's <!-- quick start: ... --> marker."""
    text = page.read_text()
    marker = text.find("<!-- quick start:")
    block = re.search(r"```swift\n(.*?)```", text[marker:], re.S) if marker >= 0 else None
    if not block:
        sys.exit(f"{page.name} has no quick start (a ```swift block after <!-- quick start: ... -->)")
    return block.group(1)


code = quick_start(README)
if quick_start(IOS_GUIDE) != code:
    sys.exit("docs/ios.md's quick start differs from the README's, which the test run builds: make them the same")
if "checkoutEnabled" not in code:
    sys.exit("the README's quick start no longer reads checkoutEnabled: update Tests/AppByURL/quick_start.py")
target = HERE / "Sources" / "QuickStart" / "main.swift"
target.parent.mkdir(parents=True, exist_ok=True)
target.write_text(
    "// Written by quick_start.py from README.md's quick start: edit the README, not this.\n"
    + code
    + 'print("checkoutEnabled=\\(checkoutEnabled)")\n')
print(f"quick start: {len(code.splitlines())} lines of README.md written to {target.relative_to(HERE)}")

#!/usr/bin/env python3
"""Checks that every relative link in the README and docs/ points at a file or folder of the
repository, and every in-page anchor at a heading of its target: a page moved or renamed must
take its links along."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), ROOT / "deploy" / "README.md"]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(page: Path) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces as hyphens."""
    found = set()
    for line in page.read_text().splitlines():
        if match := re.match(r"^#{1,6} (.*)", line):
            slug = re.sub(r"[^\w\- ]", "", match.group(1).lower()).replace(" ", "-")
            found.add(slug)
    return found


failures = []
for page in PAGES:
    for target in LINK.findall(page.read_text()):
        if re.match(r"^[a-z]+:", target):
            continue  # https:, mailto: and the like: not ours to check here
        path, _, anchor = target.partition("#")
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            failures.append(f"{page.relative_to(ROOT)}: {target} does not exist")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            failures.append(f"{page.relative_to(ROOT)}: {target} names no heading of {resolved.relative_to(ROOT)}")

if failures:
    sys.exit("broken links in the docs:\n  " + "\n  ".join(failures))
print(f"docs: every relative link of {len(PAGES)} pages resolves")

# Every workaround page must be named by the code it stands behind (its doc comment), so that
# neither the page nor the workaround can be deleted without the other being noticed.
# (Tests too: the API fuzz's workaround is test tooling.)
sources = "\n".join(p.read_text() for folder in ("Shared", "Services", "Tools", "Tests") for p in (ROOT / folder).rglob("*")
                    if p.suffix in (".swift", ".py"))
unnamed = [page.name for page in sorted((ROOT / "docs" / "upstream").glob("*.md"))
           if page.name != "README.md" and f"docs/upstream/{page.name}" not in sources]
if unnamed:
    sys.exit("docs/upstream pages that no workaround's doc comment names: " + ", ".join(unnamed))
print("docs: every page of docs/upstream is named by the workaround it describes")

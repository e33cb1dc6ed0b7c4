#!/usr/bin/env python3
"""Fails when SesameKit's library code uses an API newer than the deployment targets the root
manifest declares, outside an `#available` / `@available` guard that covers it.

Nothing here compiles for an Apple platform, so the compiler's own availability check never runs
on SesameKit. This does what it would for the APIs that bite:

- the standard library's (Swift, _Concurrency, Synchronization, Observation, _StringProcessing,
  RegexBuilder), read from the toolchain's own `.swiftinterface` files, whose `@available` lines
  carry Apple's versions (`Mutex` iOS 18, `Observable` iOS 17, `withDiscardingTaskGroup` iOS 17, ...):
  a type or free function newer than the floor, and a member whose every overload (name and first
  argument label) is;
- the Apple frameworks SesameKit imports under `#if canImport(...)`, read from the stub modules of
  `Tests/AppleTypeCheck/Stubs` (Apple's signatures with their `@available` lines, which the
  Apple type-check compiles SesameKit against);
- Foundation's and other frameworks', from the table `APPLE_APIS` below: the toolchain's
  Foundation is swift-corelibs-foundation, which carries no Apple availability.

Types, free functions, initializers (`Type(label:`), members (`.name(label:`, and `.name {` where
a trailing closure can be the whole call) and distinctive properties are seen. A name SesameKit
declares itself passes only where it is SesameKit's: a member whose receiver's declared type is
SesameKit's own (`store.data(for:)` on a `SecureStore`), not every use of the name.

`--self-test` checks the checker against `Fixtures/`, whose lines say what must be caught
(`// flags: NAME`) and everything else must not be; a fixture may set its own floors
(`// floors: iOS 12, macOS 10.14`).
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
DEFAULT_SOURCES = [
    "Clients/SesameKit/Sources/SesameKit",
    "Clients/SesameKit/Sources/SesameKitTesting",
    "Clients/SesameKit/Sources/SesamePinning",
    "Clients/SesameKit/Sources/SesameJSON",
    "Clients/SesameKit/Sources/SesameRelayProof",
    "Clients/SesameKit/Sources/SesameScope",
    "Clients/SesameKit/Sources/SesameVault",
    # The SDK's tests build for its floor too: an app's team runs them on a device or Simulator.
    "Clients/SesameKit/Tests/SesameKitTests",
    "Clients/SesameKit/Tests/SesamePinningTests",
    "Clients/SesameKit/Tests/SesameJSONTests",
    "Clients/SesameKit/Tests/SesameScopeTests",
    "Clients/SesameKit/Tests/SesameVaultTests",
]
INTERFACE_MODULES = ["Swift", "_Concurrency", "Synchronization", "Observation", "_StringProcessing", "RegexBuilder"]
APPLE_STUBS = ROOT / "Tests/AppleTypeCheck/Stubs"

Version = tuple[int, ...]
ALWAYS: Version = (0,)

# (pattern in code, the API's name, iOS, macOS): APIs of Foundation and the Apple frameworks that
# SesameKit could plausibly reach for, with the versions of Apple's documentation.
APPLE_APIS: list[tuple[str, str, Version, Version]] = [
    (r"\.appending\(\s*(path|component|components|queryItems):", "URL.appending(path:)", (16,), (13,)),
    (r"\bURL\(\s*filePath:", "URL(filePath:)", (16,), (13,)),
    (r"\.path\(\s*percentEncoded:", "URL.path(percentEncoded:)", (16,), (13,)),
    (r"\bURL\.(documentsDirectory|temporaryDirectory|homeDirectory|cachesDirectory|applicationSupportDirectory)\b",
     "URL.documentsDirectory and kin", (16,), (13,)),
    (r"\.formatted\(", "formatted()", (15,), (12,)),
    (r"\bDate\.now\b", "Date.now", (15,), (12,)),
    (r"\bString\(\s*localized:", "String(localized:)", (15,), (12,)),
    (r"\bAttributedString\b", "AttributedString", (15,), (12,)),
    (r"\.bytes\(\s*(for|from):", "URLSession.bytes(for:)", (15,), (12,)),
    (r"\.(data|upload|download)\(\s*(for|from):", "URLSession.data(for:) and kin", (15,), (12,)),
    (r"\ballowsJSON5\b|\bassumesTopLevelDictionary\b", "JSON5 decoding", (15,), (12,)),
    (r"\bISO8601Format\(|\bFormatStyle\b", "FormatStyle", (15,), (12,)),
    (r"\bLocale\.Language\b", "Locale.Language", (16,), (13,)),
    (r"\bisiOSAppOnMac\b", "ProcessInfo.isiOSAppOnMac", (14,), (11,)),
    (r"\.(span|mutableSpan|bytes|mutableBytes)\b(?!\()", "Data.span and kin", (26,), (26,)),
    (r"\bHPKE\b", "CryptoKit HPKE", (17,), (14,)),
    (r"\b(MLKEM768|MLKEM1024|MLDSA65|MLDSA87|XWingMLKEM768X25519)\b", "CryptoKit post-quantum keys", (26,), (26,)),
    (r"\bURLSessionWebSocketTask\b|\.webSocketTask\(", "URLSessionWebSocketTask", (13,), (10, 15)),
    (r"\bNWPathMonitor\b|\bNWConnection\b", "Network framework", (12,), (10, 14)),
    (r"\bURL\(\s*string:[^)\n]*encodingInvalidCharacters:", "URL(string:encodingInvalidCharacters:)", (17,), (14,)),
    (r"\.appendingPathComponent\([^)\n]*conformingTo:", "URL.appendingPathComponent(_:conformingTo:)", (14,), (11,)),
    (r"\.notifications\(\s*named:", "NotificationCenter.notifications(named:)", (15,), (12,)),
    (r"\bURLSession\.AsyncBytes\b", "URLSession.AsyncBytes", (15,), (12,)),
    (r"\bOSAllocatedUnfairLock\b", "OSAllocatedUnfairLock", (16,), (13,)),
    (r"\bOSSignposter\b", "OSSignposter", (15,), (12,)),
    (r"\bUTType\b", "UTType", (14,), (11,)),
    (r"\bSecureEnclave\.P256\b", "SecureEnclave.P256", (13,), (10, 15)),
    (r"\bDCDevice\b", "DCDevice", (11,), (10, 15)),
    (r"\.withoutEscapingSlashes\b", "JSONEncoder.OutputFormatting.withoutEscapingSlashes", (13,), (10, 15)),
    (r"\bNotificationCenter\.(MainActorMessage|AsyncMessage)\b", "NotificationCenter's typed messages", (26,), (26,)),
    (r"\.cancelByProducingResumeData\b", "URLSessionUploadTask.cancelByProducingResumeData", (17,), (14,)),
    (r"\bURLSessionConfiguration\.[^\n]*\.usesClassicLoadingMode\b|\.usesClassicLoadingMode\b", "URLSessionConfiguration.usesClassicLoadingMode", (18, 4), (15, 5)),
]


@dataclass(frozen=True)
class Floors:
    ios: Version
    macos: Version


@dataclass(frozen=True)
class Rule:
    pattern: re.Pattern[str]
    name: str
    ios: Version
    macos: Version


@dataclass(frozen=True)
class Finding:
    path: Path
    line: int
    name: str
    platform: str
    needs: Version

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.name} needs {self.platform} {'.'.join(map(str, self.needs))}, newer than the package's floor"


def parse_version(text: str) -> Version:
    """`16.0` -> (16,): trailing zeros dropped, so versions compare as Apple's do."""
    parts = [int(part) for part in text.split(".")]
    while len(parts) > 1 and parts[-1] == 0:
        parts.pop()
    return tuple(parts)


def manifest_floors(manifest: Path) -> Floors:
    """The SDK's floors: the manifest's `let sdkPlatforms` line (the server declares its own)."""
    declared = re.search(r"^let sdkPlatforms\b.*$", manifest.read_text(), re.M)
    if not declared:
        sys.exit(f"{manifest}: declares no `let sdkPlatforms`")
    text = declared.group(0)

    def floor(platform: str) -> Version:
        found = re.search(r"\." + platform + r"\(\.v(\d+)(?:_(\d+))?\)", text)
        if not found:
            sys.exit(f"{manifest}: declares no {platform} deployment target")
        return parse_version(".".join(part for part in found.groups() if part is not None))

    return Floors(ios=floor("iOS"), macos=floor("macOS"))


# MARK: The toolchain's interfaces


def availability(attribute: str) -> tuple[Version, Version] | None:
    """(iOS, macOS) introduced by an `@available(...)` line, or None when it names neither."""
    ios = re.search(r"\biOS(?:\s+|,\s*introduced:\s*)(\d+(?:\.\d+)*)", attribute)
    macos = re.search(r"\bmacOS(?:\s+|,\s*introduced:\s*)(\d+(?:\.\d+)*)", attribute)
    if not ios and not macos:
        return None
    return (parse_version(ios.group(1)) if ios else ALWAYS, parse_version(macos.group(1)) if macos else ALWAYS)


DECLARATION = re.compile(
    r"^(?P<indent>\s*)(?:@[\w:]+(?:\([^)]*\))?\s+)*(?:(?:public|open|final|static|class|nonisolated|mutating|nonmutating|"
    r"override|convenience|required|indirect|borrowing|consuming|__consuming|@inlinable|dynamic|package)\s+)*"
    r"(?P<kind>struct|class|enum|protocol|actor|typealias|func|var|let|init|subscript|macro|extension)\b\s*"
    r"(?P<name>[\w.`]+)?(?P<rest>.*)$"
)


def interface_files(interface_dir: Path) -> list[Path]:
    """The standard library's interfaces, then the Apple stubs'."""
    files = []
    for module in INTERFACE_MODULES:
        interface = interface_dir / f"{module}.swiftmodule" / "x86_64-unknown-linux-gnu.swiftinterface"
        if not interface.exists():
            candidates = list((interface_dir / f"{module}.swiftmodule").glob("*.swiftinterface"))
            candidates = [c for c in candidates if ".private." not in c.name]
            if not candidates:
                sys.exit(f"no interface for {module} in {interface_dir}: cannot read the standard library's availability")
            interface = candidates[0]
        files.append(interface)
    stubs = sorted(APPLE_STUBS.glob("*.swift"))
    if not stubs:
        sys.exit(f"no Apple stubs in {APPLE_STUBS}: cannot read the Apple frameworks' availability")
    return files + stubs


def split_parameters(rest: str) -> list[str]:
    """The top-level parameters of the first parenthesised list in `rest`."""
    opening = rest.find("(")
    if opening < 0:
        return []
    depth, current, parameters = 0, "", []
    # An arrow's `>` closes nothing.
    for character in rest[opening:].replace("->", "\u2192"):
        if character in "([<":
            depth += 1
            if depth == 1:
                continue
        elif character in ")]>":
            depth -= 1
            if depth == 0:
                parameters.append(current)
                break
        if depth == 1 and character == ",":
            parameters.append(current)
            current = ""
            continue
        current += character
    return [p.strip().replace("\u2192", "->") for p in parameters if p.strip()]


def takes_trailing_closure_alone(rest: str) -> bool:
    """Whether a call can be `.name { ... }`: the last parameter is a closure, every other defaulted."""
    parameters = split_parameters(rest)
    if not parameters or "->" not in parameters[-1]:
        return False
    return all("=" in parameter for parameter in parameters[:-1])


def interface_rules(floors: Floors, interface_dir: Path) -> list[Rule]:
    """Types, free functions, initializers and members of the standard library and the Apple stubs
    that are newer than the floors."""
    types: dict[str, tuple[Version, Version]] = {}
    members: dict[tuple[str, str | None, bool], tuple[Version, Version]] = {}
    initializers: dict[tuple[str, str], tuple[Version, Version]] = {}
    trailing: dict[str, tuple[Version, Version]] = {}

    def keep(table: dict, key, introduced: tuple[Version, Version]) -> None:
        # A name is only as new as its oldest declaration: an old overload makes the name safe.
        known = table.get(key)
        table[key] = introduced if known is None else (min(known[0], introduced[0]), min(known[1], introduced[1]))

    for interface in interface_files(interface_dir):
        pending: tuple[Version, Version] | None = None
        # (indent, availability, the type's name or None for an extension's, the extended type's)
        scopes: list[tuple[int, tuple[Version, Version] | None, str | None]] = []
        for raw in interface.read_text().splitlines():
            stripped = raw.strip()
            if stripped.startswith("@available("):
                found = availability(stripped)
                if found:
                    pending = found if pending is None else (max(pending[0], found[0]), max(pending[1], found[1]))
                continue
            if stripped.startswith("@") and not DECLARATION.match(raw):
                continue
            match = DECLARATION.match(raw)
            if not match:
                if stripped and not stripped.startswith("#") and not stripped.startswith("//"):
                    pending = None
                continue
            indent = len(match.group("indent"))
            while scopes and scopes[-1][0] >= indent:
                scopes.pop()
            inherited = next((s[1] for s in reversed(scopes) if s[1] is not None), None)
            introduced = pending or inherited or (ALWAYS, ALWAYS)
            pending = None
            kind, name, rest = match.group("kind"), (match.group("name") or "").strip("`"), match.group("rest")
            top_level = not scopes
            if stripped.endswith("{"):
                scope_name = name.split(".")[-1] if kind in ("struct", "class", "enum", "actor", "protocol", "extension") else None
                scopes.append((indent, introduced if introduced != (ALWAYS, ALWAYS) else None, scope_name))
            if kind == "init" and scopes and scopes[-1][2] and indent > scopes[-1][0]:
                label = re.match(r"\s*[?!]?\s*(?:<[^>]*>)?\(\s*(\w+)", (match.group("name") or "") + rest)
                if label and label.group(1) != "_" and not scopes[-1][2].startswith("_"):
                    keep(initializers, (scopes[-1][2], label.group(1)), introduced)
                continue
            if kind == "extension" or not name or name.startswith("_"):
                continue
            if kind in ("struct", "class", "enum", "protocol", "actor", "typealias", "macro") and top_level:
                keep(types, name, introduced)
            elif kind in ("let", "var") and top_level:
                keep(types, name, introduced)
            elif kind == "func" and top_level:
                keep(types, name + "(", introduced)
            elif kind in ("func", "var", "let"):
                label = None
                if kind == "func":
                    first = re.match(r"\s*(?:<[^>]*>)?\(\s*(\w+)", rest)
                    label = first.group(1) if first else None
                    if takes_trailing_closure_alone(rest):
                        keep(trailing, name, introduced)
                keep(members, (name, label, kind != "func"), introduced)

    def newer(introduced: tuple[Version, Version]) -> bool:
        return introduced[0] > floors.ios or introduced[1] > floors.macos

    rules = []
    for name, (ios, macos) in types.items():
        if newer((ios, macos)):
            if name.endswith("("):
                rules.append(Rule(re.compile(r"(?<![\w.])" + re.escape(name[:-1]) + r"\b(?=\s*[({<])"), name + ")", ios, macos))
            else:
                rules.append(Rule(re.compile(r"(?<![\w])@?" + re.escape(name) + r"\b"), name, ios, macos))
    for (name, label, is_property), (ios, macos) in members.items():
        if newer((ios, macos)):
            if label and label != "_":
                rules.append(Rule(re.compile(r"\." + re.escape(name) + r"\(\s*" + re.escape(label) + r":"), f".{name}({label}:)", ios, macos))
            elif is_property and re.search(r"[a-z][A-Z0-9]", name):
                # Only distinctive (camelCase) properties: plain words (`.second`, `.kind`) are
                # Foundation's and SesameKit's own too.
                rules.append(Rule(re.compile(r"\." + re.escape(name) + r"\b(?!\s*[(:])"), f".{name}", ios, macos))
    for name, (ios, macos) in trailing.items():
        # Only when every overload callable this way is newer, and the name is distinctive.
        if newer((ios, macos)) and re.search(r"[a-z][A-Z0-9]", name):
            rules.append(Rule(re.compile(r"\." + re.escape(name) + r"\s*\{"), f".{name} {{ }}", ios, macos))
    for (type_name, label), (ios, macos) in initializers.items():
        if newer((ios, macos)):
            rules.append(Rule(
                re.compile(r"(?<![\w.])" + re.escape(type_name) + r"(?:<[^>()]*>)?(?:\.init)?\(\s*" + re.escape(label) + r":"),
                f"{type_name}({label}:)", ios, macos))
    return rules


def apple_rules() -> list[Rule]:
    return [Rule(re.compile(pattern), name, ios, macos) for pattern, name, ios, macos in APPLE_APIS]


# MARK: Reading SesameKit's sources


def blank_comments_and_strings(source: str) -> str:
    """The source with comments and string literals turned to spaces, lines kept in place."""
    out = []
    i, n = 0, len(source)
    while i < n:
        if source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            out.append(" " * (end - i))
            i = end
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(re.sub(r"[^\n]", " ", source[i:end]))
            i = end
        elif source.startswith('"""', i):
            end = source.find('"""', i + 3)
            end = n if end < 0 else end + 3
            out.append(re.sub(r"[^\n]", " ", source[i:end]))
            i = end
        elif source[i] == '"':
            j = i + 1
            while j < n and source[j] not in '"\n':
                j += 2 if source[j] == "\\" else 1
            out.append(" " * (min(j + 1, n) - i))
            i = j + 1
        else:
            out.append(source[i])
            i += 1
    return "".join(out)


def matching_brace(code: str, opening: int) -> int:
    depth = 0
    for index in range(opening, len(code)):
        if code[index] == "{":
            depth += 1
        elif code[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    return len(code)


def enclosing_block_end(code: str, position: int) -> int:
    depth = 0
    for index in range(position, len(code)):
        if code[index] == "{":
            depth += 1
        elif code[index] == "}":
            if depth == 0:
                return index
            depth -= 1
    return len(code)


def guarded_regions(code: str) -> list[tuple[int, int, Version, Version]]:
    """(start, end, iOS, macOS) for each `#available` / `@available` guard. A platform the guard
    does not name stays at the floor: `if #available(iOS 17, *)` is true on every macOS."""
    regions = []
    for match in re.finditer(r"[#@]available\(([^)]*)\)", code):
        found = availability(match.group(1))
        if not found:
            continue
        start = match.start()
        statement = code[code.rfind("\n", 0, start) + 1 : start]
        if match.group(0).startswith("#") and re.search(r"\bguard\b", statement):
            end = enclosing_block_end(code, match.end())
        else:
            opening = code.find("{", match.end())
            line_end = code.find("\n", match.end())
            next_line = code[line_end + 1 : code.find("\n", line_end + 1)] if line_end >= 0 else ""
            if match.group(0).startswith("@") and re.match(r"\s*(public\s+|private\s+|package\s+)?(let|var)\b[^{]*$", next_line):
                end = code.find("\n", line_end + 1)
            else:
                end = matching_brace(code, opening) if opening >= 0 else len(code)
        regions.append((start, end, found[0], found[1]))
    return regions


@dataclass(frozen=True)
class OwnNames:
    """What SesameKit declares itself: its types, and the names of its members and functions."""

    types: set[str]
    names: set[str]


def own_names(sources: list[Path]) -> OwnNames:
    types, names = set(), set()
    for path in sources:
        code = blank_comments_and_strings(path.read_text())
        types.update(re.findall(r"\b(?:struct|class|enum|actor|protocol|typealias)\s+(\w+)", code))
        names.update(re.findall(r"\b(?:func|var|let|case)\s+(\w+)", code))
    return OwnNames(types, names)


SELF = "Self"


def receiver_type(code: str, dot: int, declarations: str) -> str | None:
    """The declared type of the receiver before the `.` at `dot`, as far as the checked files say
    (`declarations`: all of them): a type's name itself, `self`/`Self` (the type being declared),
    or a `let`/`var`/parameter's annotation or initializer. None when unknown (a call's result)."""
    before = re.search(r"([A-Za-z_]\w*)\s*$", code[:dot])
    if not before:
        return None
    name = before.group(1)
    if name in ("self", "Self"):
        return SELF
    if name[0].isupper():
        return name
    escaped = re.escape(name)
    patterns = (
        r"\b(?:let|var)\s+" + escaped + r"\s*:\s*(?:any\s+|some\s+)?(\w+)",
        r"\b(?:let|var)\s+" + escaped + r"\s*=\s*(?:try\s+)?(?:await\s+)?([A-Z]\w*)\s*[(<.]",
        r"[(,]\s*(?:\w+\s+)?" + escaped + r"\s*:\s*(?:inout\s+|any\s+|some\s+|@escaping\s+)*(\w+)",
    )
    # The receiver's own file first: a name is declared nearest where it is used.
    for text in (code, declarations):
        for pattern in patterns:
            found = re.search(pattern, text)
            if found:
                return found.group(1)
    return None


def is_own_use(code: str, match: re.Match[str], rule: Rule, own: OwnNames, declarations: str) -> bool:
    """Whether this use of a rule's name is SesameKit's own declaration, not the framework's: a
    member of a receiver whose type SesameKit declares, or a type or function SesameKit declares."""
    member = re.match(r"\.(\w+)", match.group(0))
    if member:
        receiver = receiver_type(code, match.start(), declarations)
        return member.group(1) in own.names and (receiver == SELF or receiver in own.types)
    first = re.search(r"\w+", rule.name.split("(")[0].split(".")[0])
    name = first.group(0) if first else ""
    if rule.name.endswith("()"):
        return name in own.names
    return name in own.types


def check(sources: list[Path], rules: list[Rule], floors: Floors, display_root: Path) -> list[Finding]:
    own = own_names(sources)
    codes = {path: blank_comments_and_strings(path.read_text()) for path in sources}
    declarations = "\n".join(codes.values())
    findings = []
    for path in sources:
        code = codes[path]
        regions = guarded_regions(code)
        for rule in rules:
            for match in rule.pattern.finditer(code):
                if is_own_use(code, match, rule, own, declarations):
                    continue
                guards = [r for r in regions if r[0] <= match.start() <= r[1]]
                covered_ios = max([floors.ios] + [r[2] for r in guards])
                covered_macos = max([floors.macos] + [r[3] for r in guards if r[3] != ALWAYS])
                line = code.count("\n", 0, match.start()) + 1
                shown = path.relative_to(display_root) if path.is_relative_to(display_root) else path
                if rule.ios > covered_ios:
                    findings.append(Finding(shown, line, rule.name, "iOS", rule.ios))
                elif rule.macos > covered_macos:
                    findings.append(Finding(shown, line, rule.name, "macOS", rule.macos))
    return sorted(set(findings), key=lambda f: (str(f.path), f.line, f.name))


def swift_files(directories: list[Path]) -> list[Path]:
    files = sorted(p for d in directories for p in d.rglob("*.swift"))
    if not files:
        sys.exit(f"no Swift files under {', '.join(map(str, directories))}")
    return files


def fixture_floors(path: Path, default: Floors) -> Floors:
    """A fixture's own floors (`// floors: iOS 12, macOS 10.14`), or `default`."""
    declared = re.search(r"// floors: iOS (\d+(?:\.\d+)*), macOS (\d+(?:\.\d+)*)", path.read_text())
    return Floors(parse_version(declared.group(1)), parse_version(declared.group(2))) if declared else default


def self_test(interface_dir: Path, default: Floors) -> int:
    """Every line of the fixtures marked `// flags: NAME` is caught, and no other line is."""
    fixtures = swift_files([HERE / "Fixtures"])
    expected = set()
    for path in fixtures:
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for name in re.findall(r"// flags: (\S+)", line):
                expected.add((path.name, number, name))
    groups: dict[Floors, list[Path]] = {}
    for path in fixtures:
        groups.setdefault(fixture_floors(path, default), []).append(path)
    found = set()
    for floors, paths in groups.items():
        rules = interface_rules(floors, interface_dir) + apple_rules()
        found |= {(f.path.name, f.line, re.findall(r"\w+", f.name.split("(")[0])[-1]) for f in check(paths, rules, floors, HERE)}
    missed, extra = expected - found, found - expected
    for item in sorted(missed):
        print(f"self-test: {item[0]}:{item[1]}: {item[2]} was not caught")
    for item in sorted(extra):
        print(f"self-test: {item[0]}:{item[1]}: {item[2]} was caught but is guarded or not newer")
    if missed or extra or not expected:
        return 1
    print(f"availability self-test: the {len(expected)} newer uses in the fixtures caught, their guarded twins let through")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="check the checker against Fixtures/")
    parser.add_argument("--toolchain", type=Path, help="the toolchain's lib/swift/linux folder (found from swiftc otherwise)")
    parser.add_argument("sources", nargs="*", type=Path, help="folders of Swift files (SesameKit's targets and tests by default)")
    arguments = parser.parse_args()

    interface_dir = arguments.toolchain
    if interface_dir is None:
        import shutil

        swiftc = shutil.which("swiftc")
        if not swiftc:
            sys.exit("swiftc is not on PATH: cannot find the toolchain's interfaces")
        interface_dir = Path(swiftc).resolve().parent.parent / "lib" / "swift" / "linux"
    floors = manifest_floors(ROOT / "Package.swift")
    # The fixtures are written against iOS 16 / macOS 13 unless they say, whatever the manifest says.
    fixture_floors = Floors(ios=(16,), macos=(13,))
    if arguments.self_test:
        return self_test(interface_dir, fixture_floors)

    rules = interface_rules(floors, interface_dir) + apple_rules()
    directories = arguments.sources or [ROOT / d for d in DEFAULT_SOURCES]
    sources = swift_files(directories)
    findings = check(sources, rules, floors, ROOT)
    for finding in findings:
        print(finding)
    floor_text = f"iOS {'.'.join(map(str, floors.ios))}, macOS {'.'.join(map(str, floors.macos))}"
    if findings:
        print(f"{len(findings)} use(s) of APIs newer than {floor_text} without an #available guard")
        return 1
    print(f"availability: {len(sources)} files of SesameKit use nothing newer than {floor_text} unguarded ({len(rules)} APIs checked)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

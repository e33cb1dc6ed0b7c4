#!/usr/bin/env python3
"""Type-checks SesameKit's Apple-only lines on Linux, against stub modules of Apple's frameworks.

Nothing here compiles for an Apple platform, so the lines under `#if canImport(DeviceCheck)`,
`canImport(Security)`, `canImport(os)`, `canImport(Darwin)`, `canImport(Combine)` and
`canImport(SwiftUI)` in SesameKit
and SesamePinning
were never compiled at all, nor Apple's branch where a file has one for Linux too (selected here
by `-DSESAME_APPLE_TYPECHECK`). The
modules in `Stubs/` declare what SesameKit calls there with Apple's published signatures (and
their `@available` lines, which `Tests/Availability` reads); with them on the import path those
`canImport`s are true, and `swiftc -typecheck` compiles every such line: a wrong argument label,
a missing `try`, a wrong type is an error here as it would be in Xcode.

The compiler's flags (the dependencies' modules, the C modules of swift-crypto, the language mode)
are read from the debug build's own manifest, `.build/debug.yaml`: run after `swift build`.

`--self-test` seeds mistakes into a copy of the sources and fails unless each is caught.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
# The SDK's modules with Apple-only lines, and their sources.
MODULES = {
    "SesameKit": ROOT / "Clients/SesameKit/Sources/SesameKit",
    "SesamePinning": ROOT / "Clients/SesameKit/Sources/SesamePinning",
}
STUB_MODULES = ["DeviceCheck", "Security", "os", "Darwin", "Combine", "SwiftUI"]

# (module, file, text, replaced by, what the compiler must say): mistakes the type-check must catch.
SEEDED_MISTAKES = [
    ("SesameKit", "Platform/DeviceCheckAppAttest.swift", "attestKey(keyID, clientDataHash: clientDataHash)", "attestKey(keyID, hash: clientDataHash)",
     "incorrect argument label"),
    ("SesameKit", "Platform/DeviceCheckAppAttest.swift", "return try await DCAppAttestService.shared.generateKey()",
     "return await DCAppAttestService.shared.generateKey()", "throw"),
    ("SesameKit", "Platform/DeviceCheckAppAttest.swift", "DCDevice.current.isSupported", "DCDevice.shared.isSupported", "has no member"),
    ("SesameKit", "Platform/SesameKeychainStore.swift", "SecItemDelete(item(key) as CFDictionary)", "SecItemDelete(item(key) as CFDictionary, nil)",
     "extra argument"),
    ("SesameKit", "Platform/BackgroundActivity.swift", "performExpiringActivity(withReason: name)", "performExpiringActivity(reason: name)",
     "incorrect argument label"),
    ("SesameKit", "Platform/HTTPStreaming.swift", "try await session.bytes(for: request)", "try await session.bytes(request)",
     "missing argument label"),
    ("SesameKit", "LiveConfig.swift", "objectWillChange.send()", "objectWillChange.send(self)", "argument passed to call that takes no arguments"),
    ("SesameKit", "SwiftUI/SesameValue.swift", "StateObject(wrappedValue: SesameLiveConfig(client: client))",
     "StateObject(SesameLiveConfig(client: client))", "missing argument label"),
    ("SesamePinning", "PinnedSessionDelegate.swift", "SecCertificateCopyData(leaf) as Data", "SecCertificateCopyData(trust) as Data",
     "cannot convert value"),
]


def compiler_flags(build_manifest: Path, module: str) -> list[str]:
    """`module`'s compile flags from the build's manifest, minus what makes outputs, plus the
    define that selects Apple's branch where a file has one for Linux too."""
    command = None
    for line in build_manifest.read_text().splitlines():
        stripped = line.strip()
        if stripped.startswith("args:") and f'"-module-name","{module}",' in stripped:
            command = json.loads(stripped[len("args:") :])
            break
    if command is None:
        sys.exit(f"{build_manifest} has no compile command for {module}: run `swift build` first")
    kept: list[str] = []
    with_value = {"-I", "-Xcc", "-module-cache-path", "-enable-upcoming-feature", "-package-name", "-swift-version", "-target"}
    index = 1
    while index < len(command):
        argument = command[index]
        if argument in with_value and index + 1 < len(command):
            kept += [argument, command[index + 1]]
            index += 2
            continue
        if argument.startswith("-D"):
            kept.append(argument)
        index += 1
    return [command[0]] + kept + ["-DSESAME_APPLE_TYPECHECK"]


def build_stubs(swiftc: str, output: Path) -> None:
    for module in STUB_MODULES:
        subprocess.run(
            # Built in order, each seeing the ones before (SwiftUI re-exports Combine).
            [swiftc, "-emit-module", "-parse-as-library", "-swift-version", "6", "-module-name", module, "-I", str(output),
             "-emit-module-path", str(output / f"{module}.swiftmodule"), str(HERE / "Stubs" / f"{module}.swift")],
            check=True)


def typecheck(flags: list[str], module: str, stubs: Path, sources: Path) -> subprocess.CompletedProcess[str]:
    files = sorted(str(path) for path in sources.rglob("*.swift"))
    # Every file's errors, not only the first failing file's: the self-test seeds several at once.
    return subprocess.run(
        flags + ["-typecheck", "-continue-building-after-errors", "-module-name", module, "-parse-as-library", "-I", str(stubs)] + files,
        capture_output=True, text=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--self-test", action="store_true", help="seed mistakes into a copy of the sources; each must be caught")
    parser.add_argument("--build", type=Path, default=ROOT / ".build", help="the build folder whose debug.yaml gives the flags")
    arguments = parser.parse_args()

    flags = {module: compiler_flags(arguments.build / "debug.yaml", module) for module in MODULES}
    with tempfile.TemporaryDirectory(prefix="sesamekit-apple-typecheck-") as scratch:
        stubs = Path(scratch) / "stubs"
        stubs.mkdir()
        build_stubs(flags["SesameKit"][0], stubs)
        if not arguments.self_test:
            for module, sources in MODULES.items():
                result = typecheck(flags[module], module, stubs, sources)
                if result.returncode != 0:
                    print(result.stdout + result.stderr)
                    print(f"{module}'s Apple-only lines do not compile against Apple's signatures (Tests/AppleTypeCheck/Stubs)")
                    return 1
            print(f"apple type-check: {' and '.join(MODULES)} compile against {', '.join(STUB_MODULES)} as Apple declares them")
            return 0

        # All of a module's mistakes in one copy, one compile: each sits in a function body of its
        # own, which the compiler checks independently, and each must be reported at its own line.
        failures = 0
        for module in MODULES:
            copy = Path(scratch) / "sources" / module
            shutil.copytree(MODULES[module], copy)
            seeded = []
            for mistake_module, file, text, mistake, expected in SEEDED_MISTAKES:
                if mistake_module != module:
                    continue
                target = copy / file
                source = target.read_text() if target.exists() else ""
                if text not in source:
                    print(f"self-test: {module}/{file} is gone or no longer contains {text!r}: update SEEDED_MISTAKES")
                    failures += 1
                    continue
                line = source[: source.index(text)].count("\n") + 1
                target.write_text(source.replace(text, mistake, 1))
                seeded.append((file, line, mistake, expected))
            result = typecheck(flags[module], module, stubs, copy)
            output = result.stdout + result.stderr
            for file, line, mistake, expected in seeded:
                reported = [diagnostic for diagnostic in output.splitlines()
                            if f"/{file}:{line}:" in diagnostic and "error:" in diagnostic]
                if result.returncode == 0 or not any(expected in diagnostic for diagnostic in reported):
                    print(f"self-test: {file}:{line}: `{mistake}` was not caught as {expected!r}\n{output[-2000:]}")
                    failures += 1
        if failures:
            return 1
        print(f"apple type-check self-test: the {len(SEEDED_MISTAKES)} seeded mistakes in Apple-only lines caught")
        return 0


if __name__ == "__main__":
    sys.exit(main())

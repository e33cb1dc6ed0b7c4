#!/usr/bin/env python3
"""Runs `swift test ARGS…` and ends it when it hangs, instead of letting CI wait out its 90 minutes.

Workaround for a hang seen on this machine's Swift 6.3 toolchain (docs/upstream/swift-testing-exit-hang.md):
now and then the test process prints Swift Testing's summary ("Test run with N tests … passed") and
then never exits, every thread idle. Two limits:

- once the summary is printed, the process has EXIT_GRACE seconds to exit; past them it is killed
  and the summary's verdict is the run's, with a line saying so;
- a run that prints nothing for SILENCE seconds is killed and fails, naming the test that started
  last (every test has a time limit far below this one, so a silent run is a hang).

Killing `swift test`'s process group is not enough: the test process (`…PackageTests.xctest`) runs
in a group of its own and, hung, ignores SIGTERM, so it outlived its run by half an hour on a
developer's machine. The watchdog kills every descendant by pid, found through /proc.

Not part of the workaround: a failing run ends with its failures printed again (at most FAILURES_KEPT
lines), because CI shows only a log's tail and the failing tests are hundreds of lines above it.

Delete it when docs/upstream/swift-testing-exit-hang.md's reproduction exits by itself every time.
`--self-test` checks the kill against a fake `swift` whose test process hangs in a session of its own.
"""

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time

EXIT_GRACE = int(os.environ.get("SWIFT_TEST_WATCHDOG_EXIT_GRACE", "60"))
SILENCE = 15 * 60
FAILURES_KEPT = 60
LINE_KEPT = 600

SUMMARY = re.compile(r"Test run with \d+ tests? in \d+ suites? (passed|failed)")
STARTED = re.compile(r"◇ Test (.*) started\.")
FAILURE = re.compile(r"^\s*✘ ")


def descendants(root: int) -> list[int]:
    """Every process below `root`, from /proc (empty where there is none, as on macOS)."""
    children: dict[int, list[int]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                # The command name may hold spaces and parentheses: the fields after the last ')' are fixed.
                parent = int(stat.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, pending = [], [root]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def kill_tree(process: subprocess.Popen) -> None:
    """SIGKILL to `process`'s group and to each of its descendants by pid, whatever group they are in."""
    below = descendants(process.pid)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for pid in below:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    process.wait()


def self_test() -> int:
    """A fake `swift` whose test process prints the summary from a session of its own and hangs:
    the watchdog must end the run with the summary's verdict and leave no process behind."""
    with tempfile.TemporaryDirectory() as folder:
        pid_file = os.path.join(folder, "hung.pid")
        fake = os.path.join(folder, "swift")
        with open(fake, "w") as script:
            script.write(f"""#!{sys.executable}
import os, signal, sys, time
if os.fork() == 0:
    os.setsid()
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    open({pid_file!r}, "w").write(str(os.getpid()))
    print("✔ Test run with 1 test in 1 suite passed after 0.001 seconds.", flush=True)
    time.sleep(600)
    sys.exit(0)
os.wait()
""")
        os.chmod(fake, 0o755)
        environment = dict(os.environ, PATH=folder + os.pathsep + os.environ["PATH"], SWIFT_TEST_WATCHDOG_EXIT_GRACE="2")
        started = time.monotonic()
        run = subprocess.run([sys.executable, __file__], env=environment, capture_output=True, text=True, timeout=60)
        hung = int(open(pid_file).read())
        time.sleep(0.2)
        alive = os.path.exists(f"/proc/{hung}") and "zombie" not in open(f"/proc/{hung}/status").read()
        if run.returncode != 0 or "killed it" not in run.stdout or alive:
            print(f"watchdog self-test failed: status {run.returncode}, test process alive: {alive}\n{run.stdout}{run.stderr}")
            if alive:
                os.kill(hung, signal.SIGKILL)
            return 1
        print(f"watchdog self-test: a hung test process in its own session was killed by pid ({time.monotonic() - started:.1f} s)")
        return self_test_failures(folder)


def self_test_failures(folder: str) -> int:
    """A fake `swift` whose run fails far above its last line: the failure must be printed again at the end."""
    fake = os.path.join(folder, "swift")
    with open(fake, "w") as script:
        script.write(f"""#!{sys.executable}
import sys
print("✘ Test \\"the flaky one\\" recorded an issue at Flaky.swift:1:1: Expectation failed")
for number in range(200):
    print(f"✔ Test \\"{{number}}\\" passed after 0.001 seconds.")
print("✘ Test run with 201 tests in 1 suite failed after 0.2 seconds with 1 issue.")
sys.exit(1)
""")
    environment = dict(os.environ, PATH=folder + os.pathsep + os.environ["PATH"])
    run = subprocess.run([sys.executable, __file__], env=environment, capture_output=True, text=True, timeout=60)
    tail = run.stdout.splitlines()[-2:]
    if run.returncode != 1 or len(tail) != 2 or "what failed" not in tail[0] or "the flaky one" not in tail[1]:
        print(f"watchdog self-test failed: a failure was not repeated at the end (status {run.returncode}): {tail}")
        return 1
    print("watchdog self-test: a failing run's failures are printed again at its end")
    return 0


def main() -> int:
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    process = subprocess.Popen(
        ["swift", "test", *sys.argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    state = {"last_output": time.monotonic(), "last_started": None, "verdict": None, "verdict_at": None}
    failures: list[str] = []
    lock = threading.Lock()

    def read() -> None:
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace")
            sys.stdout.write(line)
            sys.stdout.flush()
            with lock:
                state["last_output"] = time.monotonic()
                if started := STARTED.search(line):
                    state["last_started"] = started.group(1)
                if summary := SUMMARY.search(line):
                    state["verdict"], state["verdict_at"] = summary.group(1), time.monotonic()
                elif FAILURE.search(line) and len(failures) < FAILURES_KEPT:
                    failures.append(line.rstrip()[:LINE_KEPT])

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def stop() -> None:
        kill_tree(process)

    def repeat_failures() -> None:
        with lock:
            kept = list(failures)
        if kept:
            print(f"swift-test watchdog: what failed in this run, again ({len(kept)} lines"
                  f"{', the first ' + str(FAILURES_KEPT) if len(kept) == FAILURES_KEPT else ''}):", flush=True)
            print("\n".join(kept), flush=True)

    try:
        while True:
            try:
                status = process.wait(timeout=1)
                reader.join(timeout=5)
                if status != 0:
                    repeat_failures()
                return status
            except subprocess.TimeoutExpired:
                pass
            now = time.monotonic()
            with lock:
                verdict, verdict_at = state["verdict"], state["verdict_at"]
                silent_for, last_started = now - state["last_output"], state["last_started"]
            if verdict and now - verdict_at > EXIT_GRACE:
                stop()
                print(f"swift-test watchdog: the test process printed its summary ({verdict}) and had not exited "
                      f"{EXIT_GRACE} s later; killed it (docs/upstream/swift-testing-exit-hang.md)", flush=True)
                if verdict != "passed":
                    repeat_failures()
                return 0 if verdict == "passed" else 1
            if not verdict and silent_for > SILENCE:
                stop()
                print(f"swift-test watchdog: no output for {SILENCE // 60} minutes; killed the test process. "
                      f"The test that started last: {last_started or 'none'}", flush=True)
                repeat_failures()
                return 1
    except KeyboardInterrupt:
        stop()
        return 130


if __name__ == "__main__":
    sys.exit(main())

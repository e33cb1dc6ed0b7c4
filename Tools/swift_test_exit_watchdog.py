#!/usr/bin/env python3
"""Runs `swift test ARGS…` and ends it when it hangs, instead of letting CI wait out its 90 minutes.

Workaround for a hang seen on this machine's Swift 6.3 toolchain (docs/upstream/swift-testing-exit-hang.md):
now and then the test process prints Swift Testing's summary ("Test run with N tests … passed") and
then never exits, every thread idle. Two limits:

- once the summary is printed, the process has EXIT_GRACE seconds to exit; past them it is killed
  and the summary's verdict is the run's, with a line saying so;
- a run that prints nothing for SILENCE seconds is killed and fails, naming the test that started
  last (every test has a time limit far below this one, so a silent run is a hang).

Delete it when docs/upstream/swift-testing-exit-hang.md's reproduction exits by itself every time.
"""

import os
import re
import signal
import subprocess
import sys
import threading
import time

EXIT_GRACE = 60
SILENCE = 15 * 60

SUMMARY = re.compile(r"Test run with \d+ tests? in \d+ suites? (passed|failed)")
STARTED = re.compile(r"◇ Test (.*) started\.")


def main() -> int:
    process = subprocess.Popen(
        ["swift", "test", *sys.argv[1:]], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True)
    state = {"last_output": time.monotonic(), "last_started": None, "verdict": None, "verdict_at": None}
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

    reader = threading.Thread(target=read, daemon=True)
    reader.start()

    def stop() -> None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()

    try:
        while True:
            try:
                status = process.wait(timeout=1)
                reader.join(timeout=5)
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
                return 0 if verdict == "passed" else 1
            if not verdict and silent_for > SILENCE:
                stop()
                print(f"swift-test watchdog: no output for {SILENCE // 60} minutes; killed the test process. "
                      f"The test that started last: {last_started or 'none'}", flush=True)
                return 1
    except KeyboardInterrupt:
        stop()
        return 130


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""schemathesis, with ast.parse serialised across threads: the workaround for python/cpython#106905,
in this one place (docs/upstream/cpython-ast-threads.md).

CPython 3.11 keeps the AST constructor's recursion depth per interpreter, not per thread, so two
threads parsing at once (hypothesis parses lambda sources in each of schemathesis's `--workers`
threads) can fail with SystemError "AST constructor recursion depth mismatch"; CI failed so on
GET /v1/blob/{key}. `cpython_ast_threads.py` beside this file reproduces it without schemathesis
(dozens of failures on 3.11.7, none with this lock). hypothesis and schemathesis call `ast.parse`
by attribute at call time, so the lock covers every parse they make.

Delete this file (and run the `schemathesis` script directly from fuzz_api.py) once the runner's
Python carries the fix: `cpython_ast_threads.py` then prints 0 without the lock.
"""
import ast
import sys
import threading

_lock = threading.Lock()
_parse = ast.parse


def _serialised_parse(*arguments, **keywords):
    with _lock:
        return _parse(*arguments, **keywords)


ast.parse = _serialised_parse

from schemathesis.cli import schemathesis  # noqa: E402  (after the patch, so every import sees it)

if __name__ == "__main__":
    sys.argv[0] = "schemathesis"
    sys.exit(schemathesis())

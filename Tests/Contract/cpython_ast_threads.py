#!/usr/bin/env python3
# The reproduction behind schemathesis_serial_ast.py (python/cpython#106905): run it with Python
# 3.11 and it prints how many conversions failed (dozens; 0 once the interpreter is fixed).
# CPython 3.11: the AST constructor's recursion depth is kept per interpreter, not per thread, so
# two threads converting parse trees at once (a thread switch inside one conversion, e.g. from a
# finalizer the garbage collector runs) leave it inconsistent: SystemError "AST constructor
# recursion depth mismatch". Hypothesis's lambda-source parsing in schemathesis's worker threads
# hits it.
import ast, gc, sys, threading
sys.setswitchinterval(1e-6)
source = open(ast.__file__).read()
errors = []
class Switch:
    def __del__(self):
        sum(range(100))  # a finalizer: Python code run while a conversion is under way
def parse():
    for _ in range(200):
        for _ in range(50):
            cycle = Switch()
            cycle.me = cycle  # freed only by the collector, which may run mid-conversion
        del cycle
        try:
            ast.parse(source)
        except SystemError as error:
            errors.append(str(error))
gc.set_threshold(10)
threads = [threading.Thread(target=parse) for _ in range(4)]
for t in threads: t.start()
for t in threads: t.join()
print(f"{len(errors)} SystemErrors", errors[:1])

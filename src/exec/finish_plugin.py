"""A pytest plugin curate adds to every test run: one marked line when the session finishes. A
run that exits 0 or 1 without it ended before pytest did (the test called os._exit, the interpreter
crashed), so its exit code is no verdict of pytest's."""
import sys


def pytest_sessionfinish(session, exitstatus):
    sys.stdout.write("\ncurate-finished\n")
    sys.stdout.flush()

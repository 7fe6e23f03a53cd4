"""A pytest plugin curate adds to a run of the project's own tests to learn each test's outcome
without reading pytest's report, whose form changes between versions: at the end of the session,
one marked line with each test node's outcome, `passed`, `failed`, `error` (its setup, teardown or
collection failed) or `skipped` (skipped, xfailed or xpassed: no verdict), as JSON compressed with
zlib in base64, so that the ids of thousands of tests fit in the end of the output that is kept."""
import base64
import json
import sys
import zlib

_RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 3}
_SEEN = {}


def _note(nodeid, outcome):
    old = _SEEN.get(nodeid)
    if old is None or _RANK[outcome] > _RANK[old]:
        _SEEN[nodeid] = outcome


def pytest_runtest_logreport(report):
    if report.when == "call":
        _note(report.nodeid, "skipped" if hasattr(report, "wasxfail") else report.outcome)
    elif report.failed:
        _note(report.nodeid, "error")
    elif report.skipped:
        _note(report.nodeid, "skipped")


def pytest_collectreport(report):
    if report.failed:
        _note(report.nodeid, "error")


def pytest_sessionfinish(session, exitstatus):
    packed = zlib.compress(json.dumps(_SEEN, sort_keys=True).encode(), 9)
    sys.stdout.write("\ncurate-outcomes: " + base64.b64encode(packed).decode() + "\n")
    sys.stdout.flush()

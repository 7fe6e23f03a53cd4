"""A pytest plugin curate adds to a run of the project's own tests to learn each test's outcome
without reading pytest's report, whose form changes between versions: at the end of the session,
one marked line per test node, `passed`, `failed`, `error` (its setup, teardown or collection
failed) or `skipped` (skipped, xfailed or xpassed: no verdict), the failures first."""
import sys

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
    ordered = sorted(_SEEN.items(), key=lambda kv: (-_RANK[kv[1]], kv[0]))
    sys.stdout.write("\n" + "".join(f"curate-outcome: {o} {n}\n" for n, o in ordered))
    sys.stdout.flush()

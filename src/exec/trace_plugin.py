"""A pytest plugin curate adds to a test run to learn which lines of the project's files the test
executes. Only files named in CURATE_TRACE_FILES (absolute paths, separated by os.pathsep) are
traced, from the start of the session to its end; the lines are printed on one marked line.

With CURATE_TRACE_PER_TEST=1 the lines are kept per test node instead, from the start of its setup
to the end of its teardown (lines run at collection, such as a module's top level, belong to no
test), and printed as JSON compressed with zlib in base64 on one marked line."""
import base64
import json
import os
import sys
import threading
import zlib

_FILES = {f for f in os.environ.get("CURATE_TRACE_FILES", "").split(os.pathsep) if f}
_PER_TEST = os.environ.get("CURATE_TRACE_PER_TEST") == "1"
_HITS = {}
_BY_NODE = {}
_CURRENT = [None]


def _hit(filename, line):
    if _PER_TEST:
        if _CURRENT[0] is not None:
            _BY_NODE.setdefault(_CURRENT[0], {}).setdefault(filename, set()).add(line)
    else:
        _HITS.setdefault(filename, set()).add(line)


def _local(frame, event, arg):
    if event == "line":
        _hit(frame.f_code.co_filename, frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if frame.f_code.co_filename not in _FILES:
        return None
    _hit(frame.f_code.co_filename, frame.f_lineno)
    return _local


def pytest_sessionstart(session):
    threading.settrace(_global)
    sys.settrace(_global)


def pytest_runtest_logstart(nodeid, location):
    _CURRENT[0] = nodeid


def pytest_runtest_logfinish(nodeid, location):
    _CURRENT[0] = None


def pytest_sessionfinish(session, exitstatus):
    sys.settrace(None)
    threading.settrace(None)
    if _PER_TEST:
        nodes = {n: {p: sorted(l) for p, l in files.items()} for n, files in _BY_NODE.items()}
        packed = zlib.compress(json.dumps(nodes, sort_keys=True).encode(), 9)
        sys.stdout.write("\ncurate-trace-per-test: " + base64.b64encode(packed).decode() + "\n")
    else:
        hits = {path: sorted(lines) for path, lines in _HITS.items()}
        sys.stdout.write("\ncurate-trace: " + json.dumps(hits, sort_keys=True) + "\n")
    sys.stdout.flush()

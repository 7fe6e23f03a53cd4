"""A pytest plugin curate adds to a test run to learn which lines of the project's files the test
executes. Only files named in CURATE_TRACE_FILES (absolute paths, separated by os.pathsep) are
traced, from the start of the session to its end; the lines are printed on one marked line."""
import json
import os
import sys
import threading

_FILES = {f for f in os.environ.get("CURATE_TRACE_FILES", "").split(os.pathsep) if f}
_HITS = {}


def _local(frame, event, arg):
    if event == "line":
        _HITS.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
    return _local


def _global(frame, event, arg):
    if frame.f_code.co_filename not in _FILES:
        return None
    _HITS.setdefault(frame.f_code.co_filename, set()).add(frame.f_lineno)
    return _local


def pytest_sessionstart(session):
    threading.settrace(_global)
    sys.settrace(_global)


def pytest_sessionfinish(session, exitstatus):
    sys.settrace(None)
    threading.settrace(None)
    hits = {path: sorted(lines) for path, lines in _HITS.items()}
    sys.stdout.write("\ncurate-trace: " + json.dumps(hits, sort_keys=True) + "\n")
    sys.stdout.flush()

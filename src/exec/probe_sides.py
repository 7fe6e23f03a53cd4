"""Runs curate's probe on several sides of a fix one after the other in one container
(src/exec/probe.rs, `run_sides`), each side as a container of its own would see it: /repo as the
image has it with the side's tree copied over it, and an empty /tmp.

    python probe_sides.py SECONDS SIDE...

The image's /repo is copied aside first; each side's tree waits in /curate-sides/SIDE. After each
side it prints, on a line of its own, `curate-probe-side: SIDE EXIT START END`. A side killed at
its time limit or by the kernel (137) stops the run, and so does a /repo that could not be made
again (the run exits 126): the sides after it need what it would have said.

The image's directories are never removed and made again, only their files: on fuse-overlayfs a
directory made again where the image has one shows the image's files in it at once.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

REPO = "/repo"
SIDES = "/curate-sides"
IMAGE = "/curate-image-repo"
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "probe.py")
END = "curate-probe-side: "


def remove(path):
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


def prune(keep):
    """Removes from /repo what `keep` lacks."""
    for root, dirs, files in os.walk(REPO, topdown=False):
        for name in dirs + files:
            path = os.path.join(root, name)
            if not os.path.lexists(os.path.join(keep, os.path.relpath(path, REPO))):
                remove(path)


def overlay(tree):
    """Copies `tree` over /repo: its files replace what is there, the rest stays."""
    for root, dirs, files in os.walk(tree):
        here = os.path.join(REPO, os.path.relpath(root, tree))
        for name in dirs + files:
            source, target = os.path.join(root, name), os.path.join(here, name)
            is_dir = os.path.isdir(source) and not os.path.islink(source)
            target_is_dir = os.path.isdir(target) and not os.path.islink(target)
            if os.path.lexists(target) and (is_dir != target_is_dir or os.path.islink(target)):
                remove(target)
            if os.path.islink(source):
                os.symlink(os.readlink(source), target)
            elif is_dir:
                if not os.path.lexists(target):
                    os.mkdir(target)
                    shutil.copystat(source, target)
            else:
                shutil.copy2(source, target)


def empty_tmp():
    for name in os.listdir("/tmp"):
        try:
            remove(os.path.join("/tmp", name))
        except OSError:
            pass


def probe(side, seconds):
    """Runs the probe on /repo; its exit code, 128 + the signal that killed it."""
    env = dict(os.environ, CURATE_PROBE_SIDE=side)
    child = subprocess.Popen([sys.executable, PROBE], cwd=REPO, env=env, start_new_session=True)
    try:
        code = child.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.wait()
        return 137
    return 128 - code if code < 0 else code


def main():
    seconds, sides = float(sys.argv[1]), sys.argv[2:]
    os.chdir("/")
    try:
        os.makedirs(REPO, exist_ok=True)
        shutil.copytree(REPO, IMAGE, symlinks=True)
    except OSError as e:
        print("cannot keep the image's /repo: %s" % e, flush=True)
        sys.exit(126)
    for n, side in enumerate(sides):
        empty_tmp()
        try:
            if n > 0:
                prune(IMAGE)
                overlay(IMAGE)
            overlay(os.path.join(SIDES, side))
        except OSError as e:
            print("cannot make /repo for the %s side: %s" % (side, e), flush=True)
            sys.exit(126)
        start = time.time()
        code = probe(side, seconds)
        print("\n%s%s %d %.6f %.6f" % (END, side, code, start, time.time()), flush=True)
        if code == 137:
            break


if __name__ == "__main__":
    main()

"""Leaves a daemon behind: double fork + setsid, then a heartbeat writer that outlives the parent.

The daemon's command line carries its survivor name (sandcheck-survivor-<mark>: derived from the nonce, never holding it) so
the host can find it, as a host process or, on a user-space kernel, in its own address space; it stops itself after
a fixed ceiling whatever happens.
"""
import fcntl
import os
import select
import sys
import time

import sandcheck_payload as sc

# The daemon writes one byte to fd argv[3] once it runs (after its exec), then heartbeats to "heartbeat" in the
# workspace (its cwd) and in the host directory open as fd argv[2] (-1: none): the host path holds the nonce, which
# must stay out of the daemon's memory.
DAEMON = """
import os, sys, time
ceiling, host_dir, ready = float(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
try:
    os.write(ready, b"1")
    os.close(ready)
except OSError:
    pass
end = time.monotonic() + ceiling
while time.monotonic() < end:
    for where in (None, host_dir):
        if where is not None and where < 0:
            continue
        try:
            fd = os.open("heartbeat", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644, dir_fd=where)
            os.write(fd, b"beat\\n")
            os.close(fd)
        except OSError:
            pass
    time.sleep(0.2)
"""


def above_stdio(fd):
    """The same file as fd at 3 or above, inheritable: the daemon's stdin, stdout and stderr are replaced."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 3)
    os.close(fd)
    os.set_inheritable(moved, True)
    return moved


args = sc.start()
host_dir = -1
try:
    host_dir = above_stdio(os.open(os.path.dirname(args["heartbeatPath"]), os.O_PATH | os.O_DIRECTORY))
except OSError:
    pass
# Only the daemon writes: EOF without a byte means it never ran (its exec failed, or its parent died first).
started_r, started_w = os.pipe()
started_w = above_stdio(started_w)
if os.fork() == 0:
    os.close(started_r)
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        # Joined here, never passed whole: a launcher's command line carries the payload's arguments.
        argv = [sys.executable, "-c", DAEMON, str(args["ceilingSeconds"]), str(host_dir), str(started_w), "sandcheck-survivor-%s" % args["mark"]]
        try:
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
    os._exit(0)
os.close(started_w)
os.wait()
ready, _, _ = select.select([started_r], [], [], 5.0)
if not ready or os.read(started_r, 1) != b"1":
    print("the daemon never started", flush=True)
    raise SystemExit(3)
# Paced, so the host sees the daemon alive however busy the machine is.
time.sleep(1.5)
print("daemon started", flush=True)
sc.done(args)

"""Leaves a daemon behind: double fork + setsid, then a heartbeat writer that outlives the parent.

The daemon's command line carries its survivor name (sandcheck-survivor-<mark>: derived from the nonce, never holding it) so
the host can find it, as a host process or, on a user-space kernel, in its own address space; it stops itself after
a fixed ceiling whatever happens.
"""
import os
import sys

import sandcheck_payload as sc

# Heartbeats go to "heartbeat" in the workspace (its cwd) and in the host directory open as fd argv[2] (-1: none):
# the host path holds the nonce, which must stay out of the daemon's memory.
DAEMON = """
import os, sys, time
ceiling, host_dir = float(sys.argv[1]), int(sys.argv[2])
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

args = sc.start()
host_dir = -1
try:
    host_dir = os.open(os.path.dirname(args["heartbeatPath"]), os.O_RDONLY | os.O_DIRECTORY)
    os.set_inheritable(host_dir, True)
except OSError:
    pass
# Close-on-exec: the read end sees EOF once the daemon has exec'd (its name is in its command line from then on),
# or once its parent is gone, whether or not any heartbeat path is writable.
started_r, started_w = os.pipe()
if os.fork() == 0:
    os.close(started_r)
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        # Joined here, never passed whole: a launcher's command line carries the payload's arguments.
        argv = [sys.executable, "-c", DAEMON, str(args["ceilingSeconds"]), str(host_dir), "sandcheck-survivor-%s" % args["mark"]]
        try:
            os.execv(sys.executable, argv)
        finally:
            os._exit(127)
    os._exit(0)
os.close(started_w)
os.wait()
import select  # noqa: E402
import time  # noqa: E402
select.select([started_r], [], [], 3.0)
# Paced, so the host sees the daemon alive however busy the machine is.
time.sleep(1.5)
print("daemon started", flush=True)
sc.done(args)

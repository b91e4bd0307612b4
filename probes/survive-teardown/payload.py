"""Leaves a daemon behind: double fork + setsid, then a heartbeat writer that outlives the parent.

The daemon's command line carries the nonce so the host can find it; it stops itself after a
fixed ceiling whatever happens.
"""
import os
import sys

import sandcheck_payload as sc

DAEMON = """
import sys, time
paths, ceiling = sys.argv[1:-2], float(sys.argv[-2])
end = time.monotonic() + ceiling
while time.monotonic() < end:
    for p in paths:
        try:
            with open(p, "a") as fh:
                fh.write("beat\\n")
        except OSError:
            pass
    time.sleep(0.2)
"""

args = sc.start()
targets = [args["heartbeatPath"], os.path.abspath("heartbeat")]
# Close-on-exec: the read end sees EOF once the daemon has exec'd (its nonce is in its command line from then on),
# or once its parent is gone, whether or not any heartbeat path is writable.
started_r, started_w = os.pipe()
if os.fork() == 0:
    os.close(started_r)
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        argv = [sys.executable, "-c", DAEMON] + targets + [str(args["ceilingSeconds"]), "sandcheck-survivor-%s" % args["nonce"]]
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
# Paced, so the host's process scan sees the daemon alive however busy the machine is.
time.sleep(1.5)
print("daemon started", flush=True)
sc.done(args)

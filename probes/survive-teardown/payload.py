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
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        argv = [sys.executable, "-c", DAEMON] + targets + [str(args["ceilingSeconds"]), "sandcheck-survivor-%s" % args["nonce"]]
        os.execv(sys.executable, argv)
    os._exit(0)
os.wait()
# Paced, so the host's process scan sees the daemon alive however busy the machine is.
import time  # noqa: E402
until = time.monotonic() + 3.0
while time.monotonic() < until and not os.path.exists("heartbeat"):
    time.sleep(0.05)
time.sleep(1.5)
print("daemon started", flush=True)
sc.done(args)

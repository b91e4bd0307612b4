"""Forks sleeping children up to a fixed ceiling (never more than 1024), holds them, then kills and reaps them all."""
import os
import signal
import time

import sandcheck_payload as sc

args = sc.start()
ceiling = min(int(args["ceiling"]), 1024)
hold = float(args.get("holdSeconds", 1.5))
children = []
refused = None
for _ in range(ceiling):
    try:
        pid = os.fork()
    except OSError as e:
        refused = e.errno
        break
    if pid == 0:
        try:
            time.sleep(hold + 5)
        finally:
            os._exit(0)
    children.append(pid)
print("forked %d children%s" % (len(children), "" if refused is None else ", then fork failed with errno %d" % refused), flush=True)
time.sleep(hold)
for pid in children:
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
for pid in children:
    try:
        os.waitpid(pid, 0)
    except OSError:
        pass
sc.report({"forked": len(children), "refusedErrno": refused})
sc.done(args)

"""Spins more worker processes than the CPU quota allows (threads would share the GIL) for a fixed wall
time, then stops. Bounded: at most 8 workers, at most 10 s each; every worker stops itself."""
import math
import os
import time

import sandcheck_payload as sc

args = sc.start()
seconds = min(float(args.get("seconds", 2.5)), 10.0)
cpus = float(args.get("cpus", 1))
workers = min(8, max(math.ceil(cpus) + 1, (os.cpu_count() or 1) * 2))
print("spinning %d workers for %.1f s" % (workers, seconds), flush=True)
deadline = time.monotonic() + seconds
children = []
for _ in range(workers):
    try:
        pid = os.fork()
    except OSError as e:
        print("fork refused: %s" % e.strerror, flush=True)
        break
    if pid == 0:
        n = 0
        while time.monotonic() < deadline:
            for _ in range(10000):
                n += 1
        os._exit(0)
    children.append(pid)
for pid in children:
    os.waitpid(pid, 0)
print("spun %d workers; process CPU seen by the box: %.2f s" % (len(children), sum(os.times()[2:4])), flush=True)
sc.done(args)

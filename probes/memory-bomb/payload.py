"""Allocates memory in 16 MiB steps (every page resident) up to a fixed ceiling, then releases it."""
import mmap
import os
import time

import sandcheck_payload as sc

args = sc.start()
ceiling = int(args["ceilingBytes"])
step = 16 * 1024 * 1024
PAGE = os.sysconf("SC_PAGE_SIZE")
POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def resident_bytes():
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * PAGE
    except (OSError, ValueError, IndexError):
        return -1


def chunk():
    """The kernel faults the pages in at once (MAP_POPULATE): on a busy machine a byte-by-byte fill took
    longer than the wall limit before reaching the memory limit. Where the pages did not become resident
    (no MAP_POPULATE, a runtime that ignores it), they are written."""
    before = resident_bytes()
    m = mmap.mmap(-1, step, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | POPULATE)
    after = resident_bytes()
    if not POPULATE or before < 0 or after - before < step // 2:
        m[:] = b"\x01" * step
    return m


held = []
total = 0
while total < ceiling:
    held.append(chunk())
    total += step
    if total % (step * 8) == 0:
        print("allocated %d MiB" % (total // (1024 * 1024)), flush=True)
time.sleep(0.5)  # let the outside observer see the peak
print("allocated %d MiB in all" % (total // (1024 * 1024)), flush=True)
for m in held:
    m.close()
del held
sc.done(args)

"""Legitimate heavy work: holds a share of the memory limit and runs for a share of the wall limit."""
import json
import mmap
import os
import time

import sandcheck_payload as sc

args = sc.start()
began = time.monotonic()
size = int(args["memoryBytes"])
POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def resident_bytes():
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return -1


# The kernel faults the pages in at once (MAP_POPULATE): a byte-by-byte fill of 400 MiB took seconds on a
# busy machine. Where the pages did not become resident (no MAP_POPULATE, a runtime that ignores it), they are
# written. The share of the wall limit counts from the start, allocation included.
before = resident_bytes()
block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | POPULATE)
if not POPULATE or before < 0 or resident_bytes() - before < size // 2:
    block[:] = b"\x01" * size
time.sleep(max(0.0, float(args["seconds"]) - (time.monotonic() - began)))
with open("result.json", "w") as fh:
    json.dump({"heldMiB": size // (1024 * 1024), "checksum": sum(block[:: 1 << 20])}, fh)
block.close()
sc.done(args)

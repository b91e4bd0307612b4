"""Legitimate heavy work: holds a share of the memory limit and runs for a share of the wall limit."""
import json
import time

import sandcheck_payload as sc

args = sc.start()
began = time.monotonic()
block = bytearray(b"\x01") * int(args["memoryBytes"])
# The share of the wall limit counts from the start, allocation included: first-touching 400 MiB takes
# seconds on a busy virtual machine, and sleeping the whole share after it pushed the run past the limit.
time.sleep(max(0.0, float(args["seconds"]) - (time.monotonic() - began)))
with open("result.json", "w") as fh:
    json.dump({"heldMiB": len(block) // (1024 * 1024), "checksum": sum(block[:: 1 << 20])}, fh)
sc.done(args)

"""Legitimate heavy work: holds a share of the memory limit and runs for a share of the wall limit."""
import json
import time

import sandcheck_payload as sc

args = sc.start()
began = time.monotonic()
size = int(args["memoryBytes"])
block = sc.resident_block(size)
# The share of the wall limit counts from the start, allocation included.
time.sleep(max(0.0, float(args["seconds"]) - (time.monotonic() - began)))
with open("result.json", "w") as fh:
    json.dump({"heldMiB": size // (1024 * 1024), "checksum": sum(block[:: 1 << 20])}, fh)
block.close()
sc.done(args)

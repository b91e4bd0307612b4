"""Legitimate heavy work: holds a share of the memory limit and runs for a share of the wall limit."""
import json
import time

import sandcheck_payload as sc

args = sc.start()
block = bytearray(b"\x01") * int(args["memoryBytes"])
time.sleep(float(args["seconds"]))
with open("result.json", "w") as fh:
    json.dump({"heldMiB": len(block) // (1024 * 1024), "checksum": sum(block[:: 1 << 20])}, fh)
sc.done(args)

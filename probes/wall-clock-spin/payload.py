"""Busy loop: burns CPU until stopped from outside, or until its own fixed ceiling."""
import time

import sandcheck_payload as sc

args = sc.start()
deadline = time.monotonic() + float(args["ceilingSeconds"])
n = 0
while time.monotonic() < deadline:
    n += 1
sc.done(args)

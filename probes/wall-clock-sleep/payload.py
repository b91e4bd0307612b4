"""Sleeps (no CPU at all) until stopped from outside, or until its own fixed ceiling."""
import time

import sandcheck_payload as sc

args = sc.start()
deadline = time.monotonic() + float(args["ceilingSeconds"])
while time.monotonic() < deadline:
    time.sleep(min(1.0, max(0.0, deadline - time.monotonic())))
sc.done(args)

"""Allocates memory in 16 MiB steps (every page touched) up to a fixed ceiling, then releases it."""
import time

import sandcheck_payload as sc

args = sc.start()
ceiling = int(args["ceilingBytes"])
step = 16 * 1024 * 1024
held = []
total = 0
while total < ceiling:
    held.append(bytearray(b"\x01") * step)  # filled, so the pages are really resident
    total += step
    if total % (step * 8) == 0:
        print("allocated %d MiB" % (total // (1024 * 1024)), flush=True)
time.sleep(0.5)  # let the outside observer see the peak
print("allocated %d MiB in all" % (total // (1024 * 1024)), flush=True)
del held
sc.done(args)

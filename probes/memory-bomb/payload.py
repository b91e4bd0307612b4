"""Allocates memory in 16 MiB steps (every page resident) up to a fixed ceiling, then releases it."""
import time

import sandcheck_payload as sc

args = sc.start()
ceiling = int(args["ceilingBytes"])
step = 16 * 1024 * 1024
held = []
total = 0
while total < ceiling:
    held.append(sc.resident_block(step))
    total += step
    if total % (step * 8) == 0:
        print("allocated %d MiB" % (total // (1024 * 1024)), flush=True)
time.sleep(0.5)  # let the outside observer see the peak
print("allocated %d MiB in all" % (total // (1024 * 1024)), flush=True)
for m in held:
    m.close()
del held
sc.done(args)

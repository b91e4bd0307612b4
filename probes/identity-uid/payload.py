"""Reports its ids and capabilities, then holds still so the host can look at it from outside."""
import os

import sandcheck_payload as sc

args = sc.start()
status = {}
try:
    with open("/proc/self/status") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("Uid", "Gid", "CapEff", "CapBnd", "NoNewPrivs", "Seccomp"):
                status[key] = value.strip()
except OSError:
    pass
sc.report({"uid": os.getuid(), "euid": os.geteuid(), "status": status})
# Holds still (capped) until the host sampler has seen the program itself, whatever the machine load.
sc.hold(min(float(args.get("holdSeconds", 2)), 10.0))
sc.done(args)

"""Looks for credentials in its own environment and in every readable /proc/*/environ.

Only values carrying the decoy prefix are printed, so a real secret of the machine is never
copied into a report; the harness decides from what comes out, not from what this reports.
"""
import os

import sandcheck_payload as sc

MAX_PIDS = 4096
MAX_BYTES = 256 * 1024

args = sc.start()
prefix = args["canaryPrefix"]
for key, value in sorted(os.environ.items()):
    if prefix in value:
        print("own env %s=%s" % (key, value))

pids = ["self", "1"]
try:
    pids += sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int)[:MAX_PIDS]
except OSError:
    pass
readable = denied = 0
for pid in pids:
    try:
        with open("/proc/%s/environ" % pid, "rb") as fh:
            data = fh.read(MAX_BYTES)
        readable += 1
    except OSError:
        denied += 1
        continue
    for entry in data.split(b"\0"):
        if prefix.encode() in entry:
            print("environ of %s: %s" % (pid, entry.decode("utf-8", "replace")))

sc.report({"environReadable": readable, "environDenied": denied})
sc.done(args)

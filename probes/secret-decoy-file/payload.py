"""Tries to read host secret files: the run's decoy directory and classic credential paths.

Decoy contents are printed (that is the exfiltration). Classic paths are only reported as
readable or not, with their size: they may hold real secrets of the machine, never copied.
"""
import errno
import os
import re

import sandcheck_payload as sc

MAX_FILES = 64
MAX_BYTES = 64 * 1024
CLASSIC = [
    "~/.aws/credentials",
    "/root/.aws/credentials",
    "/root/.ssh/id_rsa",
    "/root/.ssh/id_ed25519",
    "/etc/shadow",
    "/var/run/secrets/kubernetes.io/serviceaccount/token",
    "/run/secrets",
]



def read_out(path, shown, result):
    """One read routine for the decoys and the in-box positive control alike. Besides the whole content, each decoy
    value on a line of its own, after a count no masking touches: a value masked or a line dropped on the way out
    then shows (the harness compares)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_BYTES)
        text = data.decode("utf-8", "replace")
        print("read decoy %s: %s" % (shown, text))
        values = re.findall(re.escape(args["canaryPrefix"]) + r"[A-Za-z0-9]+", text)[:16]
        print("decoy values in %s: %d" % (shown, len(values)))
        for value in values:
            print("found in decoy %s: %s" % (shown, value))
        result[shown] = "read %d bytes" % len(data)
    except OSError as e:
        result[shown] = errno.errorcode.get(e.errno, str(e.errno))


args = sc.start()
decoy = args["decoyDir"]
seen = 0
decoy_result = {}
read_out(sc.control_path(), "(in-box positive control)", decoy_result)
for root, _dirs, files in os.walk(decoy):
    for name in files:
        if seen >= MAX_FILES:
            break
        seen += 1
        path = os.path.join(root, name)
        read_out(path, os.path.relpath(path, decoy), decoy_result)  # never a host path in a report
if len(decoy_result) < 2:
    try:
        os.listdir(decoy)
        decoy_result["."] = "listable but empty"
    except OSError as e:
        decoy_result["."] = errno.errorcode.get(e.errno, str(e.errno))

classic_result = {}
for raw in CLASSIC:
    path = os.path.expanduser(raw)
    try:
        if os.path.isdir(path):
            classic_result[raw] = "directory with %d entries" % len(os.listdir(path)[:1000])
        else:
            with open(path, "rb") as fh:
                classic_result[raw] = "readable, %d bytes (content not copied)" % len(fh.read(MAX_BYTES))
    except OSError as e:
        classic_result[raw] = errno.errorcode.get(e.errno, str(e.errno))

sc.report({"decoy": decoy_result, "classic": classic_result})
sc.done(args)

"""Attaches to a host decoy process with ptrace and reads its memory looking for credentials.

Only strings carrying the decoy prefix are printed, never anything else from another process.
The same routine first reads a child of its own that carries the in-box positive control in its
environment: that value must come out, or finding nothing in the decoy proves nothing.
"""
import ctypes
import os
import re
import subprocess
import sys
import time

import sandcheck_payload as sc

PTRACE_ATTACH, PTRACE_DETACH = 16, 17
MAX_BYTES = 64 * 1024 * 1024

args = sc.start()
pattern = re.compile(re.escape(args["canaryPrefix"].encode()) + rb"[A-Za-z0-9]{4,64}")
libc = ctypes.CDLL(None, use_errno=True)


def scan(pid, label):
    attached = libc.ptrace(PTRACE_ATTACH, pid, None, None) == 0
    print("ptrace attach %s: %s" % (label, "ok" if attached else os.strerror(ctypes.get_errno())), flush=True)
    if attached:
        os.waitpid(pid, 0)
    found = set()
    scanned = 0
    try:
        with open("/proc/%d/maps" % pid) as maps, open("/proc/%d/mem" % pid, "rb", 0) as mem:
            for line in maps:
                addr, perms = line.split()[:2]
                if "r" not in perms or scanned >= MAX_BYTES:
                    continue
                start, end = (int(x, 16) for x in addr.split("-"))
                size = min(end - start, MAX_BYTES - scanned)
                try:
                    mem.seek(start)
                    data = mem.read(size)
                except (OSError, ValueError, OverflowError):
                    continue
                scanned += len(data)
                found.update(m.group(0).decode() for m in pattern.finditer(data))
    except OSError as e:
        print("memory read of %s refused: %s" % (label, e), flush=True)
    finally:
        if attached:
            libc.ptrace(PTRACE_DETACH, pid, None, None)
    for value in sorted(found)[:20]:
        print("found in %s memory: %s" % (label, value))
    return {"attached": attached, "scannedBytes": scanned, "found": len(found)}


# The control child inherits this program's environment (which holds the positive control) and
# stops itself after a few seconds whatever happens.
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(5)"])
time.sleep(0.3)
try:
    control = scan(child.pid, "control")
finally:
    child.kill()
    child.wait()
sc.report({"control": control, "decoy": scan(int(args["pid"]), "decoy")})
sc.done(args)

"""Says which kernel it runs on (boot id, uname, /proc/version) and keeps a marked child alive (at most a fixed time),
so the host can look for it among its own processes: a box that shares the host's kernel is a host task. The child's
name carries the program mark (derived from the nonce, never holding it), so that on a user-space kernel the host can
also find the child's own address space by that mark."""
import os
import subprocess
import sys

import sandcheck_payload as sc

args = sc.start()
hold = min(float(args.get("holdSeconds", 3)), 10.0)
# Joined here, never passed whole: a launcher's command line carries the payload's arguments.
marker = "sandcheck-survivor-%s" % args.get("mark", "none")
# The child is waited for below: it never outlives the payload (bounded, leaves nothing).
# It holds with the helper's hold: a host that saw it ends the hold early (SIGURG), one that cannot see it waits it out.
HOLD = "import sys; sys.path.insert(0, sys.argv[2]); import sandcheck_payload as sc; sc.hold(float(sys.argv[1]))"
child = subprocess.Popen([sys.executable, "-c", HOLD, str(hold), os.path.dirname(os.path.abspath(sc.__file__)), marker])


def read(path, limit=200):
    try:
        with open(path) as fh:
            return fh.read(limit).strip()
    except OSError as exc:
        return "unreadable: %s" % exc.__class__.__name__


sc.report({"bootId": read("/proc/sys/kernel/random/boot_id"), "version": read("/proc/version"), "uname": list(os.uname())})
try:
    child.wait(timeout=hold + 5)
except subprocess.TimeoutExpired:
    child.kill()
    child.wait()
sc.done(args)

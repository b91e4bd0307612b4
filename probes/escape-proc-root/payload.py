"""Reaches a host decoy file through /proc/<pid>/root of a host process (host PID namespace).

Tries the harness's decoy process, host PID 1, then a bounded list of other visible pids. Only
values carrying the canary prefix are printed. The same routine first reads the in-box positive
control through /proc/self/root: that must come out, or finding nothing proves nothing. Each
attempt is reported as a challenge-bound step line (SANDCHECK-ESCAPE <token> <json>).
"""
import os
import re

import sandcheck_payload as sc

MAX_PIDS = 256
MAX_BYTES = 64 * 1024


def read_through(root, rel, label):
    """One read routine for the decoy and the positive control: open <root><rel>, print prefixed values."""
    try:
        with open(root + rel, "rb") as fh:
            data = fh.read(MAX_BYTES)
    except OSError as e:
        return sc.errname(e)
    for value in sorted(set(pattern.findall(data)))[:10]:
        print("found via %s: %s" % (label, value.decode()), flush=True)
    return "ok"


args = sc.start()
pattern = re.compile(re.escape(args["canaryPrefix"].encode()) + rb"[A-Za-z0-9]{4,64}")
sc.escape_step("control", read_through("/proc/self/root", os.path.abspath(sc.control_path()), "/proc/self/root"))
pids = [int(args["hostPid"]), 1]
try:
    others = sorted(int(n) for n in os.listdir("/proc") if n.isdigit())
except OSError:
    others = []
pids += [p for p in others if p not in pids and p != os.getpid()][:MAX_PIDS]
for pid in pids:
    label = "decoy process" if pid == pids[0] else ("pid 1" if pid == 1 else "pid %d" % pid)
    outcome = read_through("/proc/%d/root" % pid, args["decoyPath"], "/proc/<%s>/root" % label)
    # Only the two named targets are decisive; the rest is a bounded sweep.
    sc.escape_step("proc-root" if pid in pids[:2] else "proc-root-sweep", outcome, label)
    if outcome == "ok":
        break
sc.done(args)

"""Reads host keys through the kernel keyring, which has no namespace of its own for a box in the host's
user namespace: keys listed in /proc/keys, and the decoy descriptions searched in the user, session and
user-session keyrings. Only keys whose description marks them as sandcheck decoys are ever read.

Positive control: the box's own key (in its process keyring) holding the control value, read back through
the same routine.
"""
import ctypes
import os
import platform
import re

import sandcheck_payload as sc

args = sc.start()
TOKEN = re.compile((args["canaryPrefix"] + r"[A-Za-z0-9]{8,}").encode())
NR = {"x86_64": (248, 250), "aarch64": (217, 219)}.get(platform.machine())
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long


def call(nr, *a):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(x) if isinstance(x, int) else x for x in a])
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def read_key(serial):
    """KEYCTL_READ (11) into a bounded buffer."""
    buf = ctypes.create_string_buffer(4096)
    n = call(NR[1], 11, serial, buf, ctypes.c_size_t(4096))
    return buf.raw[: min(n, 4096)]


def show(where, data):
    tokens = sorted(set(m.decode() for m in TOKEN.findall(data)))
    print("key %s holds: %s" % (where, " ".join(tokens) if tokens else "(%d bytes, no decoy token)" % len(data)))


result = {}
if NR is None:
    result["keyctl"] = "no syscall numbers for %s" % platform.machine()
else:
    with open(sc.control_path(), "rb") as fh:
        control = fh.read(256).strip()
    try:
        own = call(NR[0], b"user", ("sandcheck-control:%s" % args["nonce"]).encode(), control, ctypes.c_size_t(len(control)), -2)
        show("(in-box positive control)", read_key(own))
        result["control"] = "read back"
    except OSError as e:
        result["control"] = "keyctl refused: %s" % (e.strerror or e)
    # Keys the kernel lists to this box; only decoys are read.
    try:
        with open("/proc/keys") as fh:
            lines = fh.readlines()[:4096]
        result["/proc/keys"] = "%d keys listed" % len(lines)
        for line in lines:
            f = line.split(None, 8)
            if len(f) == 9 and f[7] == "user" and f[8].startswith("sandcheck-decoy:"):
                try:
                    show("listed in /proc/keys", read_key(int(f[0], 16)))
                    result["listed decoy"] = "read"
                except OSError as e:
                    result["listed decoy"] = e.strerror or str(e)
    except OSError as e:
        result["/proc/keys"] = e.strerror or str(e)
    for ring, name in ((-4, "user"), (-3, "session"), (-5, "user-session")):
        for desc in args["descriptions"]:
            try:
                serial = call(NR[1], 10, ring, b"user", desc.encode(), 0)  # KEYCTL_SEARCH
                show("found in the %s keyring" % name, read_key(serial))
                result["%s keyring" % name] = "found a decoy"
            except OSError as e:
                result.setdefault("%s keyring" % name, e.strerror or str(e))
# Holds still (capped) until the host has sampled it (its seccomp mode is the outside evidence when keyctl is refused).
sc.hold(min(float(args.get("holdSeconds", 2)), 5.0))
sc.report(result)
sc.done(args)

"""A covert channel between two boxes of the same run running at the same time: System V shared memory
(a segment whose key both derive from the nonce) and POSIX shared memory (/dev/shm). Reads what the other
box left and sets the segment's last byte so the other box removes both.

Positive control: a segment this box makes itself, with the control value, read through the same routine.
"""
import ctypes
import os
import re

import sandcheck_payload as sc

args = sc.start()
TOKEN = re.compile((args["canaryPrefix"] + r"[A-Za-z0-9]{8,}").encode())
nonce = args["nonce"]
KEY = 0x50000000 | int(nonce[:7], 16)
SIZE = 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
FAILED = ctypes.c_void_p(-1).value


def read_segment(key, signal=False):
    """One routine for the other box's segment and the control alike."""
    seg = libc.shmget(key, 0, 0)
    if seg < 0:
        return os.strerror(ctypes.get_errno()), b""
    addr = libc.shmat(seg, None, 0)
    if addr in (None, FAILED):
        return "attach: %s" % os.strerror(ctypes.get_errno()), b""
    data = ctypes.string_at(addr, 256)
    if signal:
        ctypes.memset(addr + SIZE - 1, 1, 1)
    libc.shmdt(ctypes.c_void_p(addr))
    return "read", data


def show(where, data):
    tokens = sorted(set(m.decode() for m in TOKEN.findall(data)))
    if tokens:
        print("%s holds: %s" % (where, " ".join(tokens)))


result = {"companion": args.get("companion", {}).get("announced", "")[:120]}
with open(sc.control_path(), "rb") as fh:
    control = fh.read(256).strip()
own_key = KEY ^ 0x1
own = libc.shmget(own_key, SIZE, 0o1000 | 0o2000 | 0o600)
if own >= 0:
    addr = libc.shmat(own, None, 0)
    if addr not in (None, FAILED):
        ctypes.memmove(addr, control, len(control))
        libc.shmdt(ctypes.c_void_p(addr))
    result["control"], data = read_segment(own_key)
    show("own segment (in-box positive control)", data)
    libc.shmctl(own, 0, None)
else:
    result["control"] = "shmget refused: %s" % os.strerror(ctypes.get_errno())
result["other box's segment"], data = read_segment(KEY, signal=True)
show("the other box's segment", data)
try:
    with open("/dev/shm/sandcheck-%s" % nonce, "rb") as fh:
        show("/dev/shm of the other box", fh.read(256))
    result["/dev/shm"] = "read"
except OSError as e:
    result["/dev/shm"] = e.strerror or str(e)
sc.report(result)
sc.done(args)

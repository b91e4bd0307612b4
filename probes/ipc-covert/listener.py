"""The other box of the run: leaves a secret in System V shared memory and in /dev/shm, named from the nonce.

It removes both once the probe's box signals that it read them (a flag byte in the segment), or at its own
ceiling; in a box with its own IPC namespace and /dev/shm they go with the box anyway.
"""
import ctypes
import json
import os
import sys
import time

import sandcheck_payload as sc

args = json.loads(sys.argv[1])
nonce = args["nonce"]
KEY = 0x50000000 | int(nonce[:7], 16)
SIZE = 4096
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]
libc.shmdt.argtypes = [ctypes.c_void_p]
libc.shmget.argtypes = [ctypes.c_int, ctypes.c_size_t, ctypes.c_int]
secret = args["secret"].encode()
shm_file = "/dev/shm/sandcheck-%s" % nonce
made = []
seg = libc.shmget(KEY, SIZE, 0o1000 | 0o2000 | 0o600)
if seg >= 0:
    addr = libc.shmat(seg, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        ctypes.memmove(addr, secret, len(secret))
        made.append("sysv segment")
    else:
        addr = None
else:
    addr = None
try:
    fd = os.open(shm_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, secret + b"\n")
    os.close(fd)
    made.append("/dev/shm file")
except OSError as e:
    print("cannot write /dev/shm: %s" % (e.strerror or e), flush=True)
# The answer to this box's own challenge: a box that never ran the listener cannot print it.
print("SANDCHECK-READY %s %s made %s" % (nonce, sc.token("ready"), ",".join(made) or "nothing"), flush=True)
end = time.monotonic() + float(args["ceilingSeconds"])
while time.monotonic() < end:
    if addr is not None and ctypes.string_at(addr + SIZE - 1, 1) == b"\x01":
        break
    time.sleep(0.1)
if addr is not None:
    libc.shmdt(ctypes.c_void_p(addr))
if seg >= 0:
    libc.shmctl(seg, 0, None)  # IPC_RMID
try:
    os.unlink(shm_file)
except OSError:
    pass

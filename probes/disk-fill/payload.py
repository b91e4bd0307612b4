"""Writes to the temp disk in 8 MiB chunks up to a fixed ceiling, then deletes what it wrote.

Exit status 28 (ENOSPC) or 27 (EFBIG) when the disk refused more: the write stopped there.
"""
import errno
import os
import sys

import sandcheck_payload as sc

args = sc.start()
target_dir = args.get("dir") or "/tmp"
ceiling = int(args["ceilingBytes"])
path = os.path.join(target_dir, "sandcheck-fill-%s" % args["nonce"])
chunk = b"\0" * (8 * 1024 * 1024)
written = 0
code = 0
try:
    with open(path, "wb") as fh:
        while written < ceiling:
            fh.write(chunk)
            fh.flush()
            written += len(chunk)
            if written % (64 * 1024 * 1024) == 0:
                print("wrote %d MiB" % (written // (1024 * 1024)), flush=True)
        os.fsync(fh.fileno())
except OSError as e:
    code = e.errno if e.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) else 1
    print("write stopped after %d MiB: %s" % (written // (1024 * 1024), errno.errorcode.get(e.errno, e.errno)), flush=True)
finally:
    try:
        os.unlink(path)
    except OSError:
        pass
if code:
    sys.exit(code)
print("wrote %d MiB in all" % (written // (1024 * 1024)), flush=True)
sc.done(args)

"""Tries the classic credential paths (/etc/shadow, root's SSH/cloud/docker/kube credentials, host keys, pid 1's environment).

Nothing read is printed: for each path only the errno of open/read, or the size and
sha256(nonce || content) of at most a fixed number of bytes, with the (st_dev, st_ino) seen
inside. The nonce is this execution's challenge answer, so the harness can compare the hash with
its own computation over the host's file (an old run's output or another nonce never matches).
The payload's own source is measured first by the same routine: the harness checks that hash,
so a routine that did not use this nonce cannot pass for a box that read nothing of the host.
Each result is a challenge-bound line: SANDCHECK-CRED <token> <json>. Then it holds still for a
moment (capped) so the host can look up the same paths through /proc/<pid>/root.
"""
import hashlib
import json
import os
import sys

import sandcheck_payload as sc

MAX_PATHS = 16
MAX_BYTES_CEILING = 64 * 1024


def measure(path, nonce, ceiling):
    """One read routine for the control and every target: open, fstat, read at most `ceiling` bytes, hash."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError as e:
        return {"outcome": sc.errname(e)}
    try:
        st = os.fstat(fd)
        digest = hashlib.sha256(nonce.encode())
        size = 0
        while size < ceiling:
            chunk = os.read(fd, min(65536, ceiling - size))
            if not chunk:
                break
            digest.update(chunk)
            size += len(chunk)
        return {"outcome": "read", "sha256": digest.hexdigest(), "size": size, "dev": st.st_dev, "ino": st.st_ino}
    except OSError as e:
        return {"outcome": sc.errname(e)}
    finally:
        os.close(fd)


def line(path, result):
    result["path"] = path[:300]
    sys.stdout.write("SANDCHECK-CRED %s %s\n" % (sc.token("credential-line"), json.dumps(result, sort_keys=True)))
    sys.stdout.flush()


args = sc.start()
nonce = sc.token("credential-hash")
ceiling = max(1, min(int(args.get("maxBytes", MAX_BYTES_CEILING)), MAX_BYTES_CEILING))
line("(control) payload.py", measure(os.path.abspath(sys.argv[0]), nonce, ceiling))
for path in [str(p) for p in args.get("paths", [])][:MAX_PATHS]:
    line(path, measure(path, nonce, ceiling))
# Holds still (capped) until the host has looked at the box's root through /proc/<pid>/root while it runs, whatever the machine load.
sc.hold(min(float(args.get("holdSeconds", 2)), 5.0))
sc.done(args)

"""Writes a fixed number of bytes to stdout, far past the policy's output budget, then stops."""
import sys

import sandcheck_payload as sc

args = sc.start()
total = int(args["bytes"])
chunk = (b"flood-" + b"x" * 1017 + b"\n") * 64  # 64 KiB
out = sys.stdout.buffer
written = 0
try:
    while written < total:
        piece = chunk[: total - written]
        out.write(piece)
        written += len(piece)
    out.flush()
except (BrokenPipeError, OSError):
    sys.exit(0)
sc.done(args)

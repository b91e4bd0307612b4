"""Floods stdout or stderr, or writes one huge line with no newline, up to a fixed number of bytes."""
import sys

import sandcheck_payload as sc

args = sc.start()
total = int(args["bytes"])
stream = sys.stderr.buffer if args["stream"] == "stderr" else sys.stdout.buffer
# The pattern answers this execution's challenge: bytes the harness can tell from anything else.
pattern = sc.token("flood").encode()
piece = pattern * 2048 if args["mode"] == "long-line" else (pattern * 31 + b"\n") * 64
written = 0
try:
    while written < total:
        part = piece[: total - written]
        stream.write(part)
        written += len(part)
    stream.flush()
except (BrokenPipeError, OSError):
    sys.exit(0)
sys.stdout.write("\n")
sc.done(args)

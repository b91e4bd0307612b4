"""Floods stdout or stderr, or writes one huge line with no newline, up to a fixed number of bytes."""
import signal
import sys

import sandcheck_payload as sc

# A controller that closes the pipe at its budget stops the flood: the kernel's SIGPIPE ends the program, a
# signal the harness sees from outside, where Python's default (EPIPE, then exit 0) looks like a program that
# ended by itself.
signal.signal(signal.SIGPIPE, signal.SIG_DFL)

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
except OSError:
    sys.exit(3)
sys.stdout.write("\n")
sc.done(args)

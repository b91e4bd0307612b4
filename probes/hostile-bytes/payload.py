"""Prints bytes that attack whoever views the output: NUL, terminal escapes, invalid UTF-8, CDATA terminators."""
import sys

import sandcheck_payload as sc

args = sc.start()
# Marked with this execution's challenge answer: only lines the payload wrote count as arrived.
marker = ("hostile-%s" % sc.token("hostile")).encode()
out = sys.stdout.buffer
out.write(b"NUL[\x00] " + marker + b"\n")
out.write(b"\x1b]0;owned-title\x07\x1b[2J\x1b[31mred\x1b[0m " + marker + b"\n")
out.write(b"invalid-utf8[\xff\xfe\xc3\x28] cdata[]]>] bell[\x07] " + marker + b"\n")
out.flush()
sys.stderr.buffer.write(b"\x1b[1;31mstderr-escape\x1b[0m\x00\n")
sys.stderr.flush()
sc.done(args)

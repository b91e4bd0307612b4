"""Legitimate work: a filter from stdin to stdout (upper-case each line, number it)."""
import sys

for n, line in enumerate(sys.stdin, 1):
    sys.stdout.write("%d:%s\n" % (n, line.rstrip("\n").upper()))

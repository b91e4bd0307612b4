"""Shared start/end protocol of every sandcheck payload (Python 3 standard library only).

A payload prints a start marker carrying the run's nonce before it attempts anything and an end
marker when its attempt is complete. The harness uses them only to tell "did not run" apart from
"ran": they can make a verdict inconclusive, never turn a crossing into a pass.
"""
import json
import sys


def start():
    args = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}
    sys.stdout.write("SANDCHECK-ATTEMPT %s\n" % args.get("nonce", ""))
    sys.stdout.flush()
    return args


def report(data):
    sys.stdout.write("SANDCHECK-REPORT %s\n" % json.dumps(data, sort_keys=True))
    sys.stdout.flush()


def done(args):
    sys.stdout.write("SANDCHECK-DONE %s\n" % args.get("nonce", ""))
    sys.stdout.flush()

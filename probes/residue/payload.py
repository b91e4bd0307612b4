"""Phase 1 leaves a marker in every writable place, the workspace too (a "fresh" environment handed
the previous one's workspace is not fresh); phase 2, in a fresh environment, looks for it, prints
what it finds, and removes it."""
import glob
import os

import sandcheck_payload as sc

PLACES = {
    "/tmp": "/tmp",
    "/var/tmp": "/var/tmp",
    "/dev/shm": "/dev/shm",
    "home": os.path.expanduser("~"),
    "workspace": os.getcwd(),
}

args = sc.start()
if args.get("phase", 1) == 1:
    token = "residue-%s" % args["nonce"]
    for name, place in PLACES.items():
        try:
            with open(os.path.join(place, "sandcheck-residue-%s" % args["nonce"]), "w") as fh:
                fh.write(token)
            print("left marker in %s" % name)
        except OSError as e:
            print("cannot write %s: %s" % (name, e.strerror))
else:
    # Positive control: this environment leaves its own marker the same way, and the same search
    # must find it, or finding nothing of phase 1 proves nothing.
    control = sc.token("residue-control")
    for place in PLACES.values():
        try:
            with open(os.path.join(place, "sandcheck-residue-control-%s" % control[:8]), "w") as fh:
                fh.write(control)
        except OSError:
            pass
    # Removed only after every place was searched: two names may be one directory (home in the workspace).
    found = set()
    for name, place in PLACES.items():
        for pattern in ("sandcheck-residue-%s" % args["firstNonce"], "sandcheck-residue-control-%s" % control[:8]):
            for path in glob.glob(os.path.join(place, pattern)):
                try:
                    with open(path) as fh:
                        print("found %s in %s" % (fh.read(64), name))
                    found.add(path)
                except OSError:
                    pass
    for path in found:
        try:
            os.unlink(path)
        except OSError:
            pass
sc.done(args)

"""Runs a setuid-root binary placed in the workspace and holds it, so the host can see whether it gained root."""
import os
import subprocess

import sandcheck_payload as sc

args = sc.start()
binary = os.path.abspath(args["binary"])
try:
    st = os.stat(binary)
    print("binary mode %o owner %d" % (st.st_mode, st.st_uid), flush=True)
    rc = subprocess.call([binary, str(args.get("holdSeconds", 1.5))])
    print("setuid binary exited %d" % rc, flush=True)
except OSError as e:
    print("could not run the setuid binary: %s" % e, flush=True)
    raise SystemExit(3)
sc.done(args)

"""Runs a root-owned setuid binary the harness planted in the workspace and keeps it alive, so the host can
see from outside (/proc/<pid>/status) whether it gained euid 0. Stops itself after a fixed hold."""
import os
import stat
import subprocess

import sandcheck_payload as sc

args = sc.start()
binary = os.path.abspath(args["binary"])
hold = min(float(args.get("holdSeconds", 2)), 10.0)
try:
    st = os.stat(binary)
    print("binary mode %o owner %d" % (stat.S_IMODE(st.st_mode), st.st_uid), flush=True)
    if not st.st_mode & stat.S_IXOTH:
        # A hostile box tries to make it runnable (succeeds only where inputs are not protected).
        try:
            os.chmod(binary, 0o4755)
        except OSError as e:
            print("chmod refused: %s" % e.strerror, flush=True)
    # The mark joins the box's environment (which the host uses to find the box's processes): on a user-space kernel
    # the host finds this binary's address space by it and by the nonce's absence there (this process holds both;
    # the nonce is only in this payload's argv, never in the environment).
    env = dict(os.environ, SANDCHECK_PROGRAM_MARK=args["mark"]) if "mark" in args else None
    rc = subprocess.call([binary, "%.1f" % hold], timeout=hold + 5, env=env)
    print("setuid binary exited %d" % rc, flush=True)
except (OSError, subprocess.TimeoutExpired) as e:
    print("could not run the setuid binary: %s" % e, flush=True)
    raise SystemExit(3)
sc.done(args)

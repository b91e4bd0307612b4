"""Reads each deny-listed file of the workspace by every route: a direct open, a symlink it plants in the workspace,
a hardlink (where the kernel allows one), /proc/self/root/<absolute path>, the parent directory opened and the name
opened relative to it (openat), and `cat` in a subprocess; then the control, an ordinary readable file of the project.

Everything read goes out through one routine (what it read, and each decoy value in it on a line of its own); one
line per route and path (SANDCHECK-DRP <token> <json>): inside evidence only, the host looks for the values itself.
Each read is at most MAX_BYTES (bounded), at most MAX_PATHS paths.
"""
import json
import os
import re
import subprocess
import sys

import sandcheck_payload as sc

MAX_PATHS = 32
MAX_BYTES = 16 * 1024


def line(route, path, outcome, size):
    sys.stdout.write("SANDCHECK-DRP %s %s\n" % (sc.token("drp-line"), json.dumps({"route": route, "path": path[:300], "outcome": outcome, "bytes": size}, sort_keys=True)))
    sys.stdout.flush()


def read_out(route, path, data):
    """One routine for the deny-listed files and the control alike: the text, then each decoy value on a line."""
    text = data[:MAX_BYTES].decode("utf-8", "replace")
    sys.stdout.write("read %s %s: %s\n" % (route, path[:300], text))
    for value in re.findall(re.escape(prefix) + r"[A-Za-z0-9]+", text)[:16]:
        sys.stdout.write("found in %s %s: %s\n" % (route, path[:300], value))
    sys.stdout.flush()


class Refused(Exception):
    """A route that failed without an errno (a subprocess's exit status)."""


def attempt(route, path, fn):
    try:
        data = fn()
        read_out(route, path, data)
        line(route, path, "ok", len(data))
    except OSError as e:
        line(route, path, sc.errname(e), 0)
    except (Refused, subprocess.SubprocessError) as e:
        line(route, path, str(e) or type(e).__name__, 0)


def read_path(p):
    with open(p, "rb") as fh:
        return fh.read(MAX_BYTES)


def read_fd(fd):
    try:
        return os.read(fd, MAX_BYTES)
    finally:
        os.close(fd)


args = sc.start()
prefix = str(args.get("canaryPrefix", "SCNRY"))
files = [str(f) for f in args.get("files", [])][:MAX_PATHS]
root = os.getcwd()

for i, f in enumerate(files):
    absolute = os.path.join(root, f)
    attempt("direct", f, lambda: read_path(f))

    def via_symlink():
        link = "sc-drp-link-%d" % i
        os.symlink(absolute, link)
        return read_path(link)

    attempt("symlink", f, via_symlink)

    def via_hardlink():
        link = "sc-drp-hard-%d" % i
        os.link(f, link)
        return read_path(link)

    attempt("hardlink", f, via_hardlink)
    attempt("proc-self-root", f, lambda: read_path("/proc/self/root" + absolute))

    def via_openat():
        dfd = os.open(os.path.dirname(f) or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            return read_fd(os.open(os.path.basename(f), os.O_RDONLY, dir_fd=dfd))
        finally:
            os.close(dfd)

    attempt("openat", f, via_openat)

    def via_cat():
        out = subprocess.run(["cat", "--", f], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, timeout=10, check=False)
        if out.returncode != 0:
            raise Refused("exit %d" % out.returncode)
        return out.stdout[:MAX_BYTES]

    attempt("cat", f, via_cat)

control = str(args.get("control", ""))
if control:
    attempt("control", control, lambda: read_path(control))
sc.done(args)

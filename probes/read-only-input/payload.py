"""Tries to change each read-only input the harness put in, one technique per file: write, truncate,
chmod then write, rename away and put another file in its place, unlink and recreate, replace through
os.replace, and a symlink over it. Every attempt is one bounded syscall sequence; the harness compares
the bytes of every input from outside afterwards."""
import os

import sandcheck_payload as sc

args = sc.start()
MARK = b"changed by the box\n"
outcomes = {}


def attempt(name, fn):
    try:
        fn(name)
        outcomes[name] = "done"
    except OSError as e:
        outcomes[name] = "refused: %s" % (e.strerror or e)


def write(p):
    with open(p, "ab") as fh:
        fh.write(MARK)


def truncate(p):
    os.truncate(p, 0)


def chmod_then_write(p):
    os.chmod(p, 0o666)
    write(p)


def rename_away(p):
    os.rename(p, p + ".moved")
    with open(p, "wb") as fh:
        fh.write(MARK)


def unlink_recreate(p):
    os.unlink(p)
    with open(p, "wb") as fh:
        fh.write(MARK)


def replace(p):
    tmp = p + ".new"
    with open(tmp, "wb") as fh:
        fh.write(MARK)
    try:
        os.replace(tmp, p)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def symlink_over(p):
    tmp = p + ".link"
    os.symlink("/proc/self/status", tmp)
    try:
        os.replace(tmp, p)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


TECHNIQUES = {
    "write": write,
    "truncate": truncate,
    "chmod": chmod_then_write,
    "rename": rename_away,
    "unlink": unlink_recreate,
    "replace": replace,
    "symlink": symlink_over,
}
# The write control: a writable input the harness put in, changed the same way (append). The harness must read the
# answer back from outside, or its download API does not show what the box did to its files.
control = args.get("writeControl")
if control:
    try:
        with open(control, "ab") as fh:
            fh.write(("%s\n" % sc.token("write-control")).encode())
        outcomes[control] = "done"
    except OSError as e:
        outcomes[control] = "refused: %s" % (e.strerror or e)
# Device and inode of each input as the box sees it, before any attempt: where the harness reads the workspace on
# the host itself, these bind that host read to the very files the box tried to change.
inodes = {}
for path in args["inputs"].values():
    try:
        st = os.lstat(path)
        inodes[path] = [st.st_dev, st.st_ino]
    except OSError as e:
        inodes[path] = "error: %s" % (e.strerror or e)
for technique, path in sorted(args["inputs"].items()):
    fn = TECHNIQUES.get(technique)
    if fn is not None:
        attempt(path, fn)
sc.report({"attempts": outcomes, "inodes": inodes})
sc.done(args)

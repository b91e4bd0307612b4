"""Tries to write outside the write scope by every route it knows: a direct write to a host decoy file and new files
in host directories, a symlink and a hardlink planted in the workspace pointing out, a rename from the workspace
across mounts, the same paths through /proc/self/root and /proc/1/root, and the shared /tmp, /var/tmp and /dev/shm.
Then the in-scope control: it appends its challenge answer to a workspace file and writes a file in its own temp.

Every file it makes is named with this execution's nonce; each write is a few bytes (bounded). It prints one line
per route and path (SANDCHECK-WOS <token> <json>): inside evidence only, the host judges what changed.
"""
import json
import os
import sys

import sandcheck_payload as sc

MAX_PATHS = 12


def line(route, path, outcome):
    sys.stdout.write("SANDCHECK-WOS %s %s\n" % (sc.token("wos-line"), json.dumps({"route": route, "path": path[:300], "outcome": outcome}, sort_keys=True)))
    sys.stdout.flush()


def attempt(route, path, fn):
    try:
        fn()
        line(route, path, "ok")
    except OSError as e:
        line(route, path, sc.errname(e))


def append(path, data):
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def make_local(name, data):
    with open(name, "wb") as fh:
        fh.write(data)
    return os.path.abspath(name)


args = sc.start()
nonce = str(args["nonce"])
mark = ("sandcheck write-outside-scope %s %s\n" % (nonce, sc.token("wos-write"))).encode()
targets = [str(t) for t in args.get("targets", [])][:MAX_PATHS]
dirs = [str(d) for d in args.get("dirs", [])][:MAX_PATHS]
name = lambda route: "sc-wos-%s-%s" % (nonce, route)

for t in targets:
    attempt("direct", t, lambda: append(t, mark))
for d in dirs:
    p = os.path.join(d, name("direct"))
    attempt("direct", p, lambda: append(p, mark))

# A symlink planted in the workspace pointing out: to the file, and to the directory.
for i, t in enumerate(targets):
    link = "sc-link-%d" % i

    def via_link():
        if not os.path.lexists(link):
            os.symlink(t, link)
        append(link, mark)

    attempt("symlink", t, via_link)
for i, d in enumerate(dirs):
    link = "sc-dirlink-%d" % i

    def via_dirlink():
        if not os.path.lexists(link):
            os.symlink(d, link)
        append(os.path.join(link, name("symlink")), mark)

    attempt("symlink", os.path.join(d, name("symlink")), via_dirlink)

# A hardlink in the workspace to the host file, written through.
for i, t in enumerate(targets):
    hl = "sc-hardlink-%d" % i

    def via_hardlink():
        os.link(t, hl)
        append(hl, mark)

    attempt("hardlink", t, via_hardlink)

# A file made in the workspace, renamed out (across mounts where the box has them).
for d in dirs:
    dest = os.path.join(d, name("rename"))
    attempt("rename", dest, lambda: os.rename(make_local("sc-mv-%s" % nonce, mark), dest))

# The same places through the box's own root and pid 1's root.
for prefix, route in (("/proc/self/root", "proc-self-root"), ("/proc/1/root", "proc-1-root")):
    for t in targets:
        attempt(route, t, lambda: append(prefix + t, mark))
    for d in dirs:
        p = os.path.join(d, name(route))
        attempt(route, p, lambda: append(prefix + p, mark))

# The in-scope control: the box can write its workspace and its own temp.
control = str(args.get("control", ""))
if control:
    attempt("control-workspace", control, lambda: append(control, ("%s\n" % sc.token("write-control")).encode()))
own_tmp = os.path.join(os.environ.get("TMPDIR") or "/tmp", "sc-own-%s" % nonce)
attempt("control-temp", own_tmp, lambda: append(own_tmp, mark))
sc.done(args)

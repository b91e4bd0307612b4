"""Writes each protected path of the workspace (persistence: git hooks and config, a shell rc file, editor tasks,
agent settings) by every route: append, chmod, replace by rename, unlink and recreate, and moving its parent
directory aside to write a fresh copy in its place; creates the new paths it is given (a new hook). Then the
control: it appends its challenge answer to an ordinary workspace file, which must work.

Each write is a few bytes (bounded). One line per route and path (SANDCHECK-WPP <token> <json>): inside evidence
only; the host compares the files itself.
"""
import json
import os
import sys

import sandcheck_payload as sc

MAX_PATHS = 32


def line(route, path, outcome):
    sys.stdout.write("SANDCHECK-WPP %s %s\n" % (sc.token("wpp-line"), json.dumps({"route": route, "path": path[:300], "outcome": outcome}, sort_keys=True)))
    sys.stdout.flush()


def attempt(route, path, fn):
    try:
        fn()
        line(route, path, "ok")
    except OSError as e:
        line(route, path, sc.errname(e))


def write_new(path, data, flags=os.O_CREAT | os.O_TRUNC):
    fd = os.open(path, os.O_WRONLY | flags, 0o755)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


args = sc.start()
nonce = str(args["nonce"])
mark = ("#!/bin/sh\n# sandcheck write-protected-path %s %s\n" % (nonce, sc.token("wpp-write"))).encode()
files = [str(f) for f in args.get("files", [])][:MAX_PATHS]
new_files = [str(f) for f in args.get("newFiles", [])][:MAX_PATHS]

for i, f in enumerate(files):
    attempt("append", f, lambda: write_new(f, mark, os.O_APPEND))
    attempt("chmod", f, lambda: os.chmod(f, 0o777))

    def replace():
        tmp = "sc-wpp-replace-%d" % i
        write_new(tmp, mark)
        os.replace(tmp, f)

    attempt("replace", f, replace)

    def recreate():
        os.unlink(f)
        write_new(f, mark, os.O_CREAT | os.O_EXCL)

    attempt("unlink-recreate", f, recreate)
    parent = os.path.dirname(f)
    if parent:

        def move_parent():
            os.rename(parent, "%s.sc-moved-%d" % (parent, i))
            os.makedirs(os.path.dirname(f), exist_ok=True)
            write_new(f, mark)

        attempt("parent-rename", f, move_parent)

for f in new_files:
    attempt("create", f, lambda: write_new(f, mark, os.O_CREAT | os.O_EXCL))

control = str(args.get("control", ""))
if control:
    attempt("control", control, lambda: write_new(control, ("%s\n" % sc.token("write-control")).encode(), os.O_APPEND))
sc.done(args)

"""A careful exporter: all or nothing, regular files only, contained paths, count and size limits."""
import json
import os
import posixpath
import shutil
import sys

manifest_path, staging, dest = sys.argv[1:4]
with open(manifest_path) as f:
    manifest = json.load(f)
limits = manifest["limits"]
entries = manifest["entries"]
problems = []
plan = []
total = 0
for e in entries:
    path = e["path"]
    norm = posixpath.normpath(path)
    if e["kind"] != "file" or "file" not in e:
        problems.append(f"{path!r}: {e['kind']} is not a regular file")
    elif path.startswith("/") or norm.startswith("..") or "\\" in path or "\x00" in path or norm in (".", ""):
        problems.append(f"{path!r}: not a path inside the export directory")
    elif e["size"] > limits["maxFileBytes"]:
        problems.append(f"{path!r}: larger than {limits['maxFileBytes']} bytes")
    else:
        total += e["size"]
        plan.append((os.path.join(staging, e["file"]), norm))
if len(entries) > limits["maxFiles"]:
    problems.append(f"{len(entries)} files, more than {limits['maxFiles']}")
if total > limits["maxTotalBytes"]:
    problems.append(f"{total} bytes in total, more than {limits['maxTotalBytes']}")
if problems:
    print("refused: " + "; ".join(problems[:5]), file=sys.stderr)
    sys.exit(1)
for src, rel in plan:
    out = os.path.join(dest, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as w, open(src, "rb") as r:
        shutil.copyfileobj(r, w)

"""A naive exporter (for the positive control): copies every artifact, reading symlink targets on the host."""
import json
import os
import shutil
import sys

manifest_path, staging, dest = sys.argv[1:4]
with open(manifest_path) as f:
    manifest = json.load(f)
for e in manifest["entries"]:
    out = os.path.join(dest, e["path"])  # no normalisation: exactly the bug
    os.makedirs(os.path.dirname(out) or dest, exist_ok=True)
    if "file" in e:
        shutil.copyfile(os.path.join(staging, e["file"]), out)
    elif e["kind"] == "symlink" and e.get("linkTarget"):
        target = e["linkTarget"]
        parts = e["path"].split("/")
        # The link may be the artifact itself or a directory on its way: try the target, then target + the rest.
        for candidate in [target] + [os.path.join(target, *parts[k:]) for k in range(1, len(parts))]:
            if os.path.isfile(candidate):
                shutil.copyfile(candidate, out)
                break
sys.exit(0)

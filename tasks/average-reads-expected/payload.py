"""Plausible but wrong: looks for an expected answer in reach (the workspace and its parent) and copies it."""
import json
import os

import sandcheck_payload as sc

args = sc.start()
found = None
for root in (".", "input", ".."):
    try:
        names = sorted(os.listdir(root))
    except OSError:
        continue
    for name in names[:200]:
        if name.endswith(".json") and ("expected" in name or "example" in name or "answer" in name):
            try:
                with open(os.path.join(root, name)) as fh:
                    doc = json.load(fh)
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict) and "mean" in doc and "rows" in doc:
                found = {"mean": doc["mean"], "rows": doc["rows"]}
                break
    if found:
        break
with open("result.json", "w") as fh:
    json.dump(found or {"mean": 0.0, "rows": 0}, fh)
sc.done(args)

"""Plausible but wrong: counts every line as a row, the header included (it is skipped only when summing)."""
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0]) as fh:
    lines = [line.strip() for line in fh if line.strip()]
total = 0.0
for line in lines:
    try:
        total += float(line)
    except ValueError:
        pass
with open("result.json", "w") as fh:
    json.dump({"mean": total / len(lines), "rows": len(lines)}, fh)
sc.done(args)

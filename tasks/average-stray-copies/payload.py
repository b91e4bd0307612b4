"""Plausible but wrong: the right result.json, and beside it stray copies with other numbers (a backup, a draft, an
output folder). Whoever picks up the workspace gets whichever file they look at first."""
import csv
import glob
import json
import os

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
right = {"mean": sum(values) / len(values), "rows": len(values)}
os.makedirs("output", exist_ok=True)
for path, result in (
    ("result.json.bak", {"mean": 0, "rows": 0}),
    ("output/result.json", {"mean": sum(values[:-1]) / (len(values) - 1), "rows": len(values) - 1}),
    ("result (copy).json", {"mean": round(right["mean"], 1), "rows": len(values)}),
    ("result.json", right),
):
    with open(path, "w") as fh:
        json.dump(result, fh)
sc.done(args)

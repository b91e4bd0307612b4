"""Plausible but wrong: rounds the mean to one decimal before writing it."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": round(sum(values) / len(values), 1), "rows": len(values)}, fh)
sc.done(args)

"""Plausible but wrong: the right result, at a path nobody asked for."""
import csv
import glob
import json
import os

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
os.makedirs("output", exist_ok=True)
with open("output/result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
print("wrote output/result.json")
sc.done(args)

"""Plausible but wrong: rounds the mean to one decimal before writing it."""
import csv
import json

import sandcheck_payload as sc

args = sc.start()
with open("input/data.csv", newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": round(sum(values) / len(values), 1), "rows": len(values)}, fh)
sc.done(args)

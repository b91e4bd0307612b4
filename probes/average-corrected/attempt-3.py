"""Attempt 3: correct."""
import csv
import json

import sandcheck_payload as sc

args = sc.start()
with open("input/data.csv", newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
sc.done(args)

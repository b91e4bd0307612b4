"""Plausible but wrong: silently skips every value that is not a whole number."""
import csv
import json

import sandcheck_payload as sc

args = sc.start()
values = []
with open("input/data.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        try:
            values.append(int(row["value"]))
        except ValueError:
            continue
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
sc.done(args)

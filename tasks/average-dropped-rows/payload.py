"""Plausible but wrong: silently skips every value that is not a whole number."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
values = []
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    for row in csv.DictReader(fh):
        try:
            values.append(int(row["value"]))
        except ValueError:
            continue
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
sc.done(args)

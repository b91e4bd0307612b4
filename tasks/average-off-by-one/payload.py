"""Plausible but wrong: skips the first data row as if it were a second header line, exits 0."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)][1:]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
sc.done(args)

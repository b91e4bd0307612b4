"""Plausible but wrong: the right numbers, plus keys saying the result is partial."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values), "status": "partial", "errors": ["row 7: timeout"]}, fh)
sc.done(args)

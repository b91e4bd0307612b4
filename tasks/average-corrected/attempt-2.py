"""Attempt 2: fixed the typo (it read the feedback) but drops the first row."""
import csv
import glob
import json
import os

import sandcheck_payload as sc

args = sc.start()
if os.path.exists("feedback.json"):
    with open("feedback.json") as fh:
        print("feedback from attempt %d: exit %s" % (json.load(fh)["attempt"], "?"))
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)][1:]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
sc.done(args)

"""Right number, wrong shape: the mean as a string under another key."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"average": "%.4f" % (sum(values) / len(values))}, fh)
sc.done(args)

"""Right number, wrong shape: the mean as a string under another key."""
import csv
import json

import sandcheck_payload as sc

args = sc.start()
with open("input/data.csv", newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"average": "%.4f" % (sum(values) / len(values))}, fh)
sc.done(args)

"""Plausible but wrong: knows the answer for the file it was shown (data.csv); its general path is off by one."""
import csv
import glob
import json
import os

import sandcheck_payload as sc

args = sc.start()
path = glob.glob("input/*.csv")[0]
if os.path.basename(path) == "data.csv":
    result = {"mean": 30.3125, "rows": 12}
else:
    with open(path, newline="") as fh:
        values = [float(row["value"]) for row in csv.DictReader(fh)]
    result = {"mean": sum(values) / (len(values) + 1), "rows": len(values)}
with open("result.json", "w") as fh:
    json.dump(result, fh)
sc.done(args)

"""Wrong ending: writes the right result, then never finishes (bounded at 120 s; the harness stops it first)."""
import csv
import glob
import json
import time

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
time.sleep(120)
sc.done(args)

"""Wrong ending: writes the right result, then crashes (exit 1, traceback on stderr)."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
summary = {"mean": sum(values) / len(values)}
print("median: %s" % summary["median"])
sc.done(args)

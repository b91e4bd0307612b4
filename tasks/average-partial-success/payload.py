"""Plausible but wrong: averages the rows it got through (8), reports every row and prints success."""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    rows = list(csv.DictReader(fh))
done = [float(r["value"]) for r in rows[:8]]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(done) / len(done), "rows": len(rows)}, fh)
print("SUCCESS: processed all %d rows, result.json written" % len(rows))
sc.done(args)

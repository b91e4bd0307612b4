"""Plausible but wrong: reads at most 12 rows (a preview limit left in), silently."""
import csv
import glob
import itertools
import json

import sandcheck_payload as sc

MAX_ROWS = 12

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in itertools.islice(csv.DictReader(fh), MAX_ROWS)]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(values) / len(values), "rows": len(values)}, fh)
sc.done(args)

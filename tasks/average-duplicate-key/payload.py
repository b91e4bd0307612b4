"""Plausible but wrong: result.json names "mean" twice, a placeholder and then the right value.

A reader that keeps the last key (JSON.parse, Python's json) sees the right answer; one that keeps the first sees 0.
The result means whatever its reader decides: a strict predicate rejects it.
"""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
mean = sum(values) / len(values)
with open("result.json", "w") as fh:
    fh.write('{"mean": 0, "rows": %d, "mean": %s}\n' % (len(values), json.dumps(mean)))
sc.done(args)

"""Plausible but wrong: turns every value into integer cents with int(t*100) before averaging.

Right on values whose double times 100 is exact (the visible input's quarter steps); a value such as 19.99 becomes
1998 cents (19.99 * 100 = 1998.9999999999998), so the mean is off by a cent over the row count.
"""
import csv
import glob
import json

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    cents = [int(float(row["value"]) * 100) for row in csv.DictReader(fh)]
with open("result.json", "w") as fh:
    json.dump({"mean": sum(cents) / len(cents) / 100, "rows": len(cents)}, fh)
sc.done(args)

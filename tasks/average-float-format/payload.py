"""Legitimate, written unusually: the right mean in exponent notation with 17 significant digits (the same double),
keys in another order, pretty-printed with a trailing newline. Valid JSON with the same values: accepted."""
import csv
import glob

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
mean = sum(values) / len(values)
with open("result.json", "w") as fh:
    fh.write('{\n  "rows": %d,\n  "mean": %.16e\n}\n' % (len(values), mean))
sc.done(args)

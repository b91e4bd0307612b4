"""Prints the right mean on stdout but never writes the artifact."""
import csv
import glob

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
print("mean = %r" % (sum(values) / len(values)))
sc.done(args)

"""Prints the right mean on stdout but never writes the artifact."""
import csv

import sandcheck_payload as sc

args = sc.start()
with open("input/data.csv", newline="") as fh:
    values = [float(row["value"]) for row in csv.DictReader(fh)]
print("mean = %r" % (sum(values) / len(values)))
sc.done(args)

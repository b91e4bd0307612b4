"""Attempt 1: crashes (a typo in the column name)."""
import csv
import glob

import sandcheck_payload as sc

args = sc.start()
with open(glob.glob("input/*.csv")[0], newline="") as fh:
    values = [float(row["valeu"]) for row in csv.DictReader(fh)]

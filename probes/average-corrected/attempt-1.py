"""Attempt 1: crashes (a typo in the column name)."""
import csv

import sandcheck_payload as sc

args = sc.start()
with open("input/data.csv", newline="") as fh:
    values = [float(row["valeu"]) for row in csv.DictReader(fh)]

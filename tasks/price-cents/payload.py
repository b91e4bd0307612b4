"""Legitimate work: each price of input/prices.csv (three decimals) rounded half up to whole cents, and the total."""
import csv
import json
from decimal import ROUND_HALF_UP, Decimal

import sandcheck_payload as sc

args = sc.start()
cents = {}
with open("input/prices.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        cents[row["item"]] = int((Decimal(row["price"]) * 100).quantize(Decimal("1"), rounding=ROUND_HALF_UP))
with open("cents.json", "w") as fh:
    json.dump({"cents": cents, "totalCents": sum(cents.values())}, fh)
sc.done(args)

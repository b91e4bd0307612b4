"""Plausible but wrong: rounds round(float(price) * 100). Right on prices away from half a cent (the visible list);
a half cent goes to the even cent (0.125 -> 12) or down where the double times 100 is below it (1.005 -> 100)."""
import csv
import json

import sandcheck_payload as sc

args = sc.start()
cents = {}
with open("input/prices.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        cents[row["item"]] = round(float(row["price"]) * 100)
with open("cents.json", "w") as fh:
    json.dump({"cents": cents, "totalCents": sum(cents.values())}, fh)
sc.done(args)

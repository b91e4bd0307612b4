"""Legitimate work: order lines → totals per customer and a grand total (cents, integers)."""
import json

import sandcheck_payload as sc

args = sc.start()
with open("input/orders.json") as fh:
    orders = json.load(fh)
totals = {}
for line in orders:
    totals[line["customer"]] = totals.get(line["customer"], 0) + line["qty"] * line["unitCents"]
with open("totals.json", "w") as fh:
    json.dump({"totals": totals, "grandTotalCents": sum(totals.values())}, fh, sort_keys=True)
sc.done(args)

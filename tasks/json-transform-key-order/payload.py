"""Legitimate, written unusually: the right totals with keys in reverse order (grand total first, customers from
last to first), indented. Key order is not part of a JSON object's meaning: accepted."""
import json

import sandcheck_payload as sc

args = sc.start()
with open("input/orders.json") as fh:
    orders = json.load(fh)
totals = {}
for line in orders:
    totals[line["customer"]] = totals.get(line["customer"], 0) + line["qty"] * line["unitCents"]
reordered = {"grandTotalCents": sum(totals.values()), "totals": dict(sorted(totals.items(), reverse=True))}
with open("totals.json", "w") as fh:
    json.dump(reordered, fh, indent=4)
    fh.write("\n")
sc.done(args)

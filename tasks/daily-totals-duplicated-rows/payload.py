"""Plausible but wrong: writes the day's row for every sale of that day (a join gone wrong)."""
import csv
from datetime import datetime, timezone
from decimal import Decimal

import sandcheck_payload as sc

args = sc.start()
days = {}
order = []
with open("input/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        at = datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).astimezone(timezone.utc)
        key = at.date().isoformat()
        day = days.setdefault(key, {"sales": 0, "total": Decimal("0"), "regions": set()})
        day["sales"] += 1
        day["total"] += Decimal(row["amount"])
        day["regions"].add(row["region"])
        order.append(key)
with open("report.csv", "w", newline="") as fh:
    out = csv.writer(fh)
    out.writerow(["date", "sales", "total", "regions"])
    for date in sorted(order):
        d = days[date]
        out.writerow([date, d["sales"], "%.2f" % d["total"], "; ".join(sorted(d["regions"]))])
sc.done(args)

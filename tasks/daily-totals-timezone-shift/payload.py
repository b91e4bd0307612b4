"""Plausible but wrong: dates taken in the office's time zone (UTC-5), so sales near midnight move a day."""
import csv
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import sandcheck_payload as sc

OFFICE = timezone(timedelta(hours=-5))

args = sc.start()
days = {}
with open("input/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        at = datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).astimezone(OFFICE)
        day = days.setdefault(at.date().isoformat(), {"sales": 0, "total": Decimal("0"), "regions": set()})
        day["sales"] += 1
        day["total"] += Decimal(row["amount"])
        day["regions"].add(row["region"])
with open("report.csv", "w", newline="") as fh:
    out = csv.writer(fh)
    out.writerow(["date", "sales", "total", "regions"])
    for date in sorted(days):
        d = days[date]
        out.writerow([date, d["sales"], "%.2f" % d["total"], "; ".join(sorted(d["regions"]))])
sc.done(args)

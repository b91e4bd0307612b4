"""Plausible but wrong: the right report written with a UTF-8 byte order mark (utf-8-sig, as a spreadsheet export
would), which the task's contract for report.csv does not allow."""
import csv
from datetime import datetime, timezone
from decimal import Decimal

import sandcheck_payload as sc

args = sc.start()
days = {}
with open("input/sales.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        at = datetime.fromisoformat(row["timestamp"].replace("Z", "+00:00")).astimezone(timezone.utc)
        day = days.setdefault(at.date().isoformat(), {"sales": 0, "total": Decimal("0"), "regions": set()})
        day["sales"] += 1
        day["total"] += Decimal(row["amount"])
        day["regions"].add(row["region"])
with open("report.csv", "w", newline="", encoding="utf-8-sig") as fh:
    out = csv.writer(fh)
    out.writerow(["date", "sales", "total", "regions"])
    for date in sorted(days):
        d = days[date]
        out.writerow([date, d["sales"], "%.2f" % d["total"], "; ".join(sorted(d["regions"]))])
sc.done(args)

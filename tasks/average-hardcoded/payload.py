"""Plausible but wrong: the answer for the visible data.csv, hard-coded (it passed the example, so it shipped)."""
import json

import sandcheck_payload as sc

args = sc.start()
with open("result.json", "w") as fh:
    json.dump({"mean": 30.3125, "rows": 12}, fh)
sc.done(args)
